"""The terminal service (``lsrp-server``): LSRP sinks on a site's cluster."""
