"""Fleet validation: run `node_validate` over an inventory, collect node results,
add fleet-level findings (outliers), write reports and quarantine failed nodes.

Node results follow the shape fixed in docs/design.md ("Node validation").
"""
