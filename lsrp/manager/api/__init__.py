"""fedex-api: the REST face of the shipment manager.

A lean WSGI application in placement's style: the middleware stack is built
in code (:mod:`lsrp.manager.api.app`), routes are one table
(:mod:`lsrp.manager.api.routes`), handlers are plain functions over
:mod:`lsrp.manager.actions`, bodies are checked against JSON schemas
(:mod:`lsrp.manager.api.schemas`) and every call is authorised by the rules
of :mod:`lsrp.manager.policies`.
"""
