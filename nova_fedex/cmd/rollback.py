"""nova-fedex-rollback: finish Nova's rollback of a live migration it lost.

A nova-compute that fails under its migration monitor (in the chaos soak,
its database restarting) leaves the live migration ``running`` for ever,
the server in task ``migrating``, and never runs its rollback
(``ComputeManager._rollback_live_migration``). The manager says so after
``[conductor] nova_stall_seconds``. Resetting the server clears its task
only; once the operator has found the guest running at the source
(``virsh list`` on both hosts), this command does the rest of the
rollback's steps, with Nova's own objects and clients:

* Placement: the allocation the migration holds on the source node goes
  back to the server, replacing the destination node's (as
  ``_revert_allocation``). Left, Nova's next live migration of the server
  fails in its conductor.
* Volumes: each mapping whose Cinder attachment is not the source's (the
  one ``pre_live_migration`` made for the destination) gets the source's
  attachment and connection back, and the destination's is deleted (as
  ``_rollback_volume_bdms``). Left, a delete of the server leaves the
  volume ``in-use`` by nobody, and a hard reboot at the source would
  connect the destination's copy.
* Ports: their bindings to the destination are removed.
* Nova's records: the migration ``error``, the server's task cleared (and
  an ERROR left by a reset made ACTIVE).

Prints what it finds; ``--apply`` does it. Run with nova.conf (as
nova-manage), where Nova's databases, Placement and Cinder are reachable.
"""

import sys

from oslo_config import cfg
from oslo_serialization import jsonutils

CONF = cfg.CONF
cli_opts = [
    cfg.StrOpt('server', required=True, positional=True,
               help='The server whose live migration Nova lost.'),
    cfg.BoolOpt('apply', default=False,
                help='Make the changes (default: only say them). Only '
                     'once the guest was seen running at the source and '
                     'not at the destination (virsh list on both).'),
]

# Statuses of a live migration Nova has not ended.
UNFINISHED = ('queued', 'accepted', 'pre-migrating', 'preparing', 'running',
              'post-migrating')


class Refused(Exception):
    """The server is not in the state this command repairs."""


def _migration(ctx, server_id):
    from nova import objects

    found = objects.MigrationList.get_by_filters(
        ctx, {'instance_uuid': server_id, 'migration_type': 'live-migration'},
        sort_keys=['created_at'], sort_dirs=['desc'])
    if not found:
        raise Refused('Nova has no live migration of server %s' % server_id)
    return found[0]


def plan(ctx, instance, migration, volume_api, reportclient):
    """The steps that would undo what the lost migration left: [(text, fn)]."""
    from nova.compute import task_states
    from nova.compute import vm_states
    from nova import objects

    if migration.status == 'completed':
        raise Refused('Nova\'s live migration %s of server %s completed: '
                      'nothing to roll back' % (migration.uuid, instance.uuid))
    if instance.host != migration.source_compute:
        raise Refused(
            'Nova records server %s on %s, not on the migration\'s source %s: '
            'the guest moved (or was moved since); this command only rolls '
            'a migration back to its source' % (
                instance.uuid, instance.host, migration.source_compute))
    steps = []
    held = reportclient.get_allocations_for_consumer(ctx, migration.uuid)
    if held:
        steps.append((
            'give the allocation migration %s holds on %s back to the server '
            '(it replaces the allocation on %s)' % (
                migration.uuid, ', '.join(sorted(held)),
                migration.dest_compute),
            lambda: reportclient.move_allocations(ctx, migration.uuid,
                                                  instance.uuid)))
    bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
        ctx, instance.uuid)
    for bdm in bdms:
        if bdm.is_volume and bdm.attachment_id:
            steps += _volume_steps(ctx, instance, bdm, volume_api)
    if migration.status in UNFINISHED:
        def error():
            migration.status = 'error'
            migration.save()
        steps.append(('mark migration %s error (it says %s)' % (
            migration.uuid, migration.status), error))
    if instance.task_state is not None or \
            instance.vm_state == vm_states.ERROR:
        # As Nova's rollback: no task; the state the guest had (a paused
        # guest stays PAUSED), but not the ERROR of an operator's reset.
        def reset():
            instance.task_state = None
            if instance.vm_state == vm_states.ERROR:
                instance.vm_state = vm_states.ACTIVE
            instance.progress = 0
            instance.drop_migration_context()
            instance.save(expected_task_state=[task_states.MIGRATING, None])
        steps.append(('clear the task of server %s (%s, task %s)' % (
            instance.uuid, instance.vm_state, instance.task_state), reset))
    return steps


def _volume_steps(ctx, instance, bdm, volume_api):
    """The source's attachment back in the mapping, the other deleted."""
    found = volume_api.attachment_get_all(
        ctx, instance_id=instance.uuid, volume_id=bdm.volume_id)
    if isinstance(found, dict):
        found = list(found.values())    # Nova's CinderFixture: by id
    attachments = [a for a in found if a['id'] != bdm.attachment_id]
    if not attachments:
        # The mapping's is the only one: the source's, or the rollback's
        # part for this volume ran already.
        return []
    if len(attachments) > 1:
        raise Refused('volume %s has %d other attachments to server %s (%s): '
                      'which one is the source\'s is not clear' % (
                          bdm.volume_id, len(attachments), instance.uuid,
                          ', '.join(a['id'] for a in attachments)))
    source = attachments[0]['id']
    dest = bdm.attachment_id

    def restore():
        info = volume_api.attachment_get(ctx, source)['connection_info']
        # What Nova's attach adds to Cinder's answer.
        info['serial'] = bdm.volume_id
        bdm.attachment_id = source
        bdm.connection_info = jsonutils.dumps(info)
        bdm.save()
        volume_api.attachment_delete(ctx, dest)
    return [('volume %s: attachment %s (the source\'s) back in Nova\'s '
             'mapping, %s (made for the destination) deleted' % (
                 bdm.volume_id, source, dest), restore)]


def run(ctx, server_id, apply=False, out=sys.stdout):
    """Says (and with ``apply`` does) the rollback's steps; returns them."""
    from nova import context as nova_context
    from nova import exception as nova_exception
    from nova.network import neutron
    from nova import objects
    from nova.scheduler.client import report
    from nova.volume import cinder

    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctx,
                                                               server_id)
    except nova_exception.InstanceMappingNotFound:
        raise Refused('Nova has no server %s' % server_id)
    with nova_context.target_cell(ctx, mapping.cell_mapping) as cctxt:
        instance = objects.Instance.get_by_uuid(
            cctxt, server_id,
            expected_attrs=['migration_context', 'info_cache'])
        migration = _migration(cctxt, server_id)
        steps = plan(cctxt, instance, migration, cinder.API(),
                     report.report_client_singleton())
        if instance.get_network_info():
            network = neutron.API()
            steps.append((
                'remove the ports\' bindings to %s' % migration.dest_compute,
                lambda: network.setup_networks_on_host(
                    cctxt, instance, host=migration.dest_compute,
                    teardown=True)))
        for text, step in steps:
            out.write('%s%s\n' % (text, '' if apply else ' (dry run)'))
            if apply:
                step()
    return [text for text, _ in steps]


def main():
    from nova import config
    from nova import context as nova_context
    from nova import objects

    CONF.register_cli_opts(cli_opts)
    config.parse_args(sys.argv)
    objects.register_all()
    try:
        run(nova_context.get_admin_context(), CONF.server, CONF.apply)
    except Refused as e:
        print('not rolled back: %s' % e, file=sys.stderr)
        return 2
    if not CONF.apply:
        print('Nothing changed: check that the guest runs at the source and '
              'not at the destination (virsh list on both), then run again '
              'with --apply.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
