"""Horizon with this plugin, served by uwsgi for the sandbox's mini-cloud
and the browser tests (see :mod:`.horizon`)."""
