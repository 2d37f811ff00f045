"""How long a unit test waits before it calls a command, a server or a process hung.

The unit tests run niced beside the lab (scripts/testrun.py): there a step that takes half a second
alone can take fifteen. A wait in a unit test is a guard against a hang, never a timer (speed is
measured in tests/bench/), so it is long; it costs time only when something is broken.
"""

HANG_S = 600
