"""The samples of doc/source/notifications.rst, made by the real classes.

    python -m fedex_manager.notifications.samples doc/source/notification_samples

writes each sample as ``<event_type>.json``; a unit test checks that the
files are what this module makes, so the documentation cannot drift from
the code. A sample is the message oslo.messaging sends (its
``message_id`` and ``timestamp``, different every time, left out).
"""

import json
import os
import sys

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging.notify import _impl_test

from fedex_manager.notifications import base
from fedex_manager.notifications import migration


def _sent(note):
    """The message ``note`` makes, sent by oslo.messaging's test driver."""
    conf = cfg.ConfigOpts()
    notifier = messaging.Notifier(
        messaging.get_notification_transport(conf, url='fake:/'),
        driver='test', topics=['versioned_notifications'])
    _impl_test.reset()
    note.emit(notifier, {})
    message = dict(_impl_test.NOTIFICATIONS[-1][1])
    for varies in ('message_id', 'timestamp'):
        message.pop(varies, None)
    return message


def migration_state_change():
    """A migration of two servers converged: READY_FOR_CUTOVER."""
    payload = migration.MigrationStatePayload.from_migration(
        {'id': '8c5d2a5e-1f0b-4b6e-9a55-3f1b1c1e2d40',
         'name': 'erp-to-site-b',
         'project_id': '6f70656e-7374-6163-6b20-70726f6a6563',
         'user_id': 'c3f6a1c2a0a94c0f9b7b1f6f2f0e3d4a',
         'servers': [{'server_id': '1d0a2b6c-5e8f-4f4b-8d1f-0a9b8c7d6e5f',
                      'name': 'erp-db'},
                     {'server_id': '7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928',
                      'name': 'erp-app'}],
         'source_site_id': '0f1e2d3c-4b5a-4697-8887-766554433221',
         'dest_site_id': 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
         'state': 'READY_FOR_CUTOVER',
         'created_at': '2025-03-03T08:00:00Z',
         'updated_at': '2025-03-07T14:31:07Z',
         'finished_at': None},
        'CATCHING_UP', 'converge', None,
        {'0f1e2d3c-4b5a-4697-8887-766554433221': 'site-a',
         'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d': 'site-b'})
    return _sent(migration.notification(payload, base.NotificationPublisher(
        host='controller-a1', source='fedex-conductor')))


SAMPLES = {'fedex.migration.state_change': migration_state_change}


def path(directory, event_type):
    return os.path.join(directory, '%s.json' % event_type)


def dumps(message):
    return json.dumps(message, indent=4, sort_keys=True) + '\n'


def main(argv=None):
    directory = (sys.argv[1:] if argv is None else argv)[0]
    os.makedirs(directory, exist_ok=True)
    for event_type, make in sorted(SAMPLES.items()):
        with open(path(directory, event_type), 'w') as f:
            f.write(dumps(make()))
        print(path(directory, event_type))


if __name__ == '__main__':
    main()
