"""Options of the shipment manager (``oslo-config-generator --namespace
fedex.manager``)."""

import copy

from oslo_config import cfg
from oslo_db import options as db_options

from fedex_manager.actions import forecast
from fedex_manager import cinder
from fedex_manager import keys
from fedex_manager.notifications import notifier
from fedex_manager import nova
from fedex_manager import rpc

manager_opts = [
    cfg.StrOpt('state_path', default='/var/lib/fedex',
               help='Directory of the manager\'s files (the SQLite '
                    'database by default, the file key store).'),
    cfg.IntOpt('heartbeat_timeout', default=60, min=5,
               help='Seconds without a heartbeat after which a terminal '
                    'is DOWN.'),
]

jobboard_opts = [
    cfg.ListOpt('hosts', default=['127.0.0.1:2181'],
                help='ZooKeeper servers (host:port) of the jobboard.'),
    cfg.StrOpt('path', default='/fedex/jobs',
               help='ZooKeeper path of the jobboard.'),
    cfg.FloatOpt('session_timeout', default=10.0, min=2.0,
                 help='Seconds after which ZooKeeper drops the claims of '
                      'a conductor that stopped answering (kill -9): '
                      'another conductor then takes its jobs.'),
]

conductor_opts = [
    cfg.StrOpt('name', help='Name of this conductor (default: '
                            'conductor-<host>-<pid>).'),
    cfg.IntOpt('max_jobs', default=8, min=1,
               help='Jobs (migration phases) one conductor runs at once.'),
    cfg.IntOpt('sweep_interval', default=30, min=1,
               help='Seconds between runs of each of the sweeper\'s '
                    'periodic jobs (phases whose job is gone posted again, '
                    'keep-warm rounds and automatic cutovers, cutovers read '
                    'back from Nova, cleanups after the retention, courier '
                    'events, returned devices wiped, devices sent home, '
                    'lock znodes of ended migrations removed) but the look for deleted servers; '
                    'also the age under which a migration\'s state change '
                    'is too fresh to sweep.'),
    cfg.IntOpt('server_check_interval', default=30, min=1,
               help='Seconds between the sweeper\'s looks in Nova for '
                    'servers deleted during their migration (one GET per '
                    'server of every migration that can still be aborted; '
                    'a deleted server aborts its migration). The safety '
                    'net of Nova\'s notifications '
                    '(nova_notifications_topic), which abort at once. Only '
                    'with compute_driver nova.'),
    cfg.StrOpt('nova_notifications_topic',
               default='versioned_notifications',
               help='Topic of Nova\'s versioned notifications (nova.conf '
                    '[notifications] versioned_notifications_topics). The '
                    'conductors listen to instance.delete.start and .end '
                    'there and abort the migrations of a deleted server '
                    'at once; the sweeper\'s look every '
                    'server_check_interval stays the safety net. Nova must '
                    'send them: [notifications] notification_format = '
                    'versioned (or both) and [oslo_messaging_notifications]'
                    ' driver = messagingv2. Empty: not listened to. Only '
                    'with compute_driver nova.'),
    cfg.StrOpt('nova_notifications_exchange', default='nova',
               help='Exchange Nova publishes its notifications to (Nova\'s '
                    'control_exchange).'),
    cfg.StrOpt('nova_notifications_transport_url', secret=True,
               help='URL of the messaging bus Nova publishes its '
                    'notifications to (nova.conf '
                    '[oslo_messaging_notifications] transport_url, else '
                    'its [DEFAULT] transport_url). Unset: the manager\'s own '
                    '([oslo_messaging_notifications] transport_url, else '
                    '[DEFAULT] transport_url).'),
    cfg.StrOpt('nova_notifications_pool',
               help='Pool of the conductors\' listener of Nova\'s '
                    'notifications: one queue for every conductor of this '
                    'manager, so that each notification is handled by one '
                    'of them. Two managers listening to one Nova need '
                    'different pools. Unset: <rpc_topic_prefix>-conductor.'),
    cfg.IntOpt('op_poll_interval', default=2, min=1,
               help='Seconds between looks at a terminal operation.'),
    cfg.StrOpt('courier', default='manual',
               help='Courier plugin (fedex_manager.couriers entry point) '
                    'of new shipments: manual or simulated.'),
    cfg.BoolOpt('return_devices', default=True,
                help='Send wiped devices home: a BLANK device away from the '
                     'terminal it was registered at (its home) is handed to '
                     'the courier back there in a return consignment, and '
                     'is BLANK at home again once plugged in. False: '
                     'devices stay where they were wiped until an operator '
                     'returns them (openstack fedex device return).'),
    cfg.IntOpt('return_timeout', default=14 * 86400, min=60,
               help='Seconds after its return consignment was made within '
                    'which a device on its way home must be back; later, '
                    'it is LOST (with an event), as after the courier\'s '
                    'lose event. A consignment the courier never took '
                    '(still SEALED) is not overdue.'),
    cfg.StrOpt('compute_driver', default='nova',
               help='Who switches the VM over at the cutover: nova (the '
                    'Nova driver calls migration_cutover_finish) or none '
                    '(the sandbox: the final delta completes it).'),
    cfg.IntOpt('op_timeout', default=120, min=5,
               help='Seconds without progress from a terminal after which '
                    'the operation is asked for again (it is idempotent).'),
    cfg.IntOpt('peer_patience', default=3600, min=0,
               help='Seconds a catch-up round whose destination terminal '
                    'is unreachable (TerminalUnreachable: its lsrp-server '
                    'does not answer) is retried, with an event saying why, '
                    'before the migration goes FAILED naming the terminal.'),
    cfg.IntOpt('peer_retry_interval', default=10, min=1,
               help='Seconds between tries of a catch-up round whose '
                    'destination terminal is unreachable (once it reports '
                    'UP again, the round is tried at once).'),
    cfg.IntOpt('cutover_max_attempts', default=3, min=1,
               help='Cutovers started without a new approval: after this '
                    'many rollbacks since the last approval, the migration '
                    'keeps catching up and waits for the operator to '
                    'approve the cutover again (openstack fedex migration '
                    'cutover).'),
    cfg.IntOpt('nova_stall_seconds', default=600, min=60,
               help='Seconds Nova\'s record of a cutover\'s live migration '
                    'may say "running" without being updated (Nova\'s '
                    'compute saves its progress every few seconds while it '
                    'migrates) before the manager takes it as lost by Nova '
                    '(its compute failed under it, e.g. with its database '
                    'restarting, and left the server in task "migrating"): '
                    'an event then tells the operator where to look and '
                    'what to reset. Above the final delta\'s and the final '
                    'state check\'s timeouts of nova_fedex, during which '
                    'the record is not updated.'),
    cfg.IntOpt('longest_cutover_first_wait', default=120, min=0,
               help='Seconds a wave member ready for its cutover leaves '
                    'the last free slots (max_parallel_cutovers) to members '
                    'whose cutovers take longer (more disks: Nova attaches '
                    'each Cinder volume at the destination) and that are '
                    'still catching up, so that the longest cutovers start '
                    'first and do not end the wave alone. 0: first ready, '
                    'first started.'),
    cfg.IntOpt('shipment_group_window', default=60, min=0,
               help='Seconds after the first migration of a shipment '
                    'group (option shipment_group) was created during '
                    'which more may join; then the group is packed.'),
]


def register_opts(conf):
    conf.register_opts(manager_opts, group='manager')
    conf.register_opts(jobboard_opts, group='jobboard')
    conf.register_opts(conductor_opts, group='conductor')
    keys.register_opts(conf)
    rpc.register_opts(conf)
    nova.register_opts(conf)
    cinder.register_opts(conf)
    forecast.register_opts(conf)
    notifier.register_opts(conf)
    db_options.set_defaults(conf)


def list_opts():
    return [('DEFAULT', copy.deepcopy(rpc.rpc_opts)),
            ('manager', copy.deepcopy(manager_opts)),
            ('jobboard', copy.deepcopy(jobboard_opts)),
            ('conductor', copy.deepcopy(conductor_opts)),
            ('shipment_keys', copy.deepcopy(keys.key_opts)),
            ('database', copy.deepcopy(db_options.database_opts)),
            (nova.GROUP, nova.list_opts()),
            (cinder.GROUP, cinder.list_opts()),
            (forecast.GROUP, copy.deepcopy(forecast.planner_opts)),
            (notifier.GROUP, copy.deepcopy(notifier.notification_opts))]
