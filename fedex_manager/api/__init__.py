"""fedex-api: the REST face of the shipment manager.

A lean WSGI application in placement's style: the middleware stack is built
in code (:mod:`fedex_manager.api.app`), routes are one table
(:mod:`fedex_manager.api.routes`), handlers are plain functions over
:mod:`fedex_manager.actions`, bodies are checked against JSON schemas
(:mod:`fedex_manager.api.schemas`) and every call is authorised by the rules
of :mod:`fedex_manager.policies`.
"""
