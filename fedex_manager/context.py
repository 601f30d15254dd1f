"""The request context the manager's database calls take."""

from oslo_context import context
from oslo_db.sqlalchemy import enginefacade


@enginefacade.transaction_context_provider
class RequestContext(context.RequestContext):
    """oslo.context's request context, carrying an enginefacade session."""


def admin(actor='manager'):
    """A context for the manager's own work (conductor, agents)."""
    ctx = RequestContext(is_admin=True, user_id=actor,
                         overwrite=False)
    return ctx


def actor_of(ctx):
    """Who did it, for events: the user, else the service."""
    if ctx is None:
        return 'manager'
    return ctx.user_id or ctx.project_id or 'manager'
