"""fedex-api in the sandbox's mini-cloud (``fedex-sandbox up --openstack``).

The ``fedex.sandbox.cloud_services`` entry point: the cloud starts it after
the OpenStack APIs, on base port + 280, and registers it in Keystone's
catalog as service ``fedex``, type ``vm-shipping``. It shares the
sandbox's manager (fedex_sandbox.manager: its database ``sandbox`` on the
shared MariaDB, its jobboard and exchange), so that what users create
through it (the CLI, Horizon) is driven by the sandbox's conductor and
terminal agents; it checks tokens as the cloud's ``fedex`` service user,
and calls Nova and Cinder as that user too (``[nova]``, ``[cinder]``).
"""

import os
import subprocess

from fedex_sandbox.services import base
from fedex_sandbox.services import cloud as cloud_mod

SERVICE_TYPE = 'vm-shipping'
PORT_NAME = 'fedex-api'


def c_driver(url, python):
    """``url`` with mysqlclient (C) instead of PyMySQL if ``python`` has it.

    A list of 100 migrations costs half the CPU in the C driver
    (doc/source/api.rst); a virtualenv made before mysqlclient joined the
    requirements keeps PyMySQL rather than failing to start.
    """
    if not url.startswith('mysql+pymysql://'):
        return url
    if subprocess.run([python, '-c', 'import MySQLdb'],
                      stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        return url
    return 'mysql+mysqldb://' + url[len('mysql+pymysql://'):]


def conf_text(cloud):
    from fedex_sandbox import manager as manager_sandbox
    from fedex_sandbox.manager import deploy
    from fedex_sandbox.services import confs
    secrets = cloud.shared.secrets()
    manager = manager_sandbox.SandboxManager(cloud.sandbox).dep
    sections = manager.common()
    sections['DEFAULT']['log_file'] = os.path.join(cloud.log_dir,
                                                   'fedex-api.log')
    conf = manager.manager_conf()
    # The cloud's own services: Cinder marks attached volumes when a
    # migration is created (fedex_sandbox.manager gives the same user).
    for group in ('nova', 'cinder'):
        if group in conf:
            sections[group] = conf[group]
    sections.update({
        'database': dict(conf['database'], connection=c_driver(
            conf['database']['connection'],
            os.path.join(cloud.venv, 'bin', 'python'))),
        'jobboard': conf['jobboard'],
        'manager': {'state_path': os.path.join(cloud.dir, 'fedex-api')},
        # Each phase is posted to the sandbox's conductor at once.
        'api': {'auth_strategy': 'keystone', 'post_jobs': True},
        'keystone_authtoken': {
            'www_authenticate_uri': cloud.keystone_url,
            'auth_url': cloud.keystone_url, 'auth_type': 'password',
            'username': 'fedex', 'password': secrets['service'],
            'project_name': 'service', 'user_domain_name': 'Default',
            'project_domain_name': 'Default'},
        # Forecasts (Horizon's preview) count the computes' own queue.
        'planner': {'live_migrations_per_host':
                    confs.LIVE_MIGRATIONS_PER_HOST},
    })
    return deploy._ini(sections)


def cloud_services(cloud):
    """[ExtraService] of fedex-api for the mini-cloud."""
    conf = os.path.join(cloud.dir, 'fedex-api', 'fedex-api.conf')
    cloud_mod.write(conf, conf_text(cloud))
    port = cloud.port(PORT_NAME)
    service = base.Service(
        'fedex-api',
        [os.path.join(cloud.venv, 'bin', 'python'), '-m', __name__,
         os.path.join(cloud.venv, 'bin', 'fedex-api'), '--config-file',
         conf, '--db-sync', '--bind', '127.0.0.1:%d' % port,
         '--processes', '1', '--threads', '4'],
        # NOTE: python (the database), then fedex-api (the schema), then
        # uwsgi: one pid, three names; a long schema sync is not an exit.
        cloud.run_dir, cloud.log_dir, marker=conf,
        comm=('python', 'fedex-api', 'uwsgi'), port=port,
        # The schema's first sync takes minutes on a loaded machine.
        start_timeout=600, kill_descendants=True)
    return [cloud_mod.ExtraService(service, catalog={
        'type': SERVICE_TYPE, 'name': 'fedex', 'url': cloud.url(PORT_NAME)})]


def ensure_database(conf_path):
    """CREATE DATABASE IF NOT EXISTS for the [database] connection."""
    import configparser

    import sqlalchemy as sa

    parser = configparser.ConfigParser(interpolation=None)
    parser.read(conf_path)
    url = sa.engine.make_url(parser.get('database', 'connection'))
    if not url.drivername.startswith('mysql'):
        return
    engine = sa.create_engine(url.set(database=''))
    with engine.begin() as conn:
        conn.execute(sa.text('CREATE DATABASE IF NOT EXISTS `%s` CHARACTER '
                             'SET utf8mb4' % url.database))
    engine.dispose()


def main(argv=None):
    """``python -m fedex_sandbox.manager.api_service FEDEX_API ARGS...``.

    Makes the database, then becomes ``fedex-api ARGS`` (--db-sync makes
    the schema, then it becomes uwsgi): one pid from start to stop.
    """
    import sys
    argv = sys.argv[1:] if argv is None else argv
    ensure_database(argv[argv.index('--config-file') + 1])
    os.execv(argv[0], argv)


if __name__ == '__main__':
    main()
