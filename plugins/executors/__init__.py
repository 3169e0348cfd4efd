"""Built-in executors: ``local`` (threads plus a pool of warm worker processes) and ``ray`` (Ray clusters)."""
