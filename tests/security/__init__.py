"""Attack tests: each performs the attack on jails, sandboxes, files, renders, the view."""
