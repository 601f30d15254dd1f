"""Handlers of fedex-api: one module per group of resources."""


def context(req):
    """The request context ContextMiddleware made."""
    return req.environ['fedex.context']
