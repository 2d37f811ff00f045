"""hwreplay's library: profile loading and the replayed vendor tools.

Test-only. Standard library only: it runs with the plain python3 of lab and
Molecule nodes. Production code never imports it.
"""
