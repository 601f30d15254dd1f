"""Options of fedex-api ([api])."""

from oslo_config import cfg

api_opts = [
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token checks '
                         'every token with Keystone'),
                        ('noauth', 'trust the X-Roles, X-Project-Id and '
                         'X-User-Id headers: unit tests only, never in '
                         'production')],
               help='How callers are authenticated.'),
    cfg.IntOpt('max_limit', default=1000, min=1,
               help='The most items one page of a list may hold; a larger '
                    '?limit= is cut to this.'),
    cfg.IntOpt('default_limit', default=100, min=1,
               help='Items per page when ?limit= is not given.'),
    cfg.BoolOpt('post_jobs', default=True,
                help='Post the phases of new migrations and actions '
                     'straight to the [jobboard] (ZooKeeper), so a '
                     'conductor starts them at once. When false they wait '
                     'for the conductors\' sweeper.'),
]


def register_opts(conf):
    conf.register_opts(api_opts, group='api')


def list_opts():
    return [('api', api_opts)]
