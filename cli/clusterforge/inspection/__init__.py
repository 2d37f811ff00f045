"""`clusterforge inspect`: scheduled validation runs, their history, trends and timers (docs/design.md,
"Scheduled inspection and trends")."""
