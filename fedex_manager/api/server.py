"""``fedex-api``: serve the API under uwsgi (a real, multi-threaded server).

It only assembles the uwsgi command line and replaces itself with uwsgi, so
what runs is exactly the documented command::

    uwsgi --http-socket 127.0.0.1:8780 --module fedex_manager.api.wsgi:application \\
          --virtualenv $VENV --lazy-apps --master --processes 2 --threads 4 \\
          --enable-threads --die-on-term --need-app --buffer-size 65535 \\
          --add-header "Connection: close" --env FEDEX_API_CONFIG=/etc/fedex/fedex-api.conf
"""

import argparse
import os
import shutil
import subprocess
import sys

DEFAULT_BIND = '127.0.0.1:8780'


def uwsgi_argv(config_files, bind=DEFAULT_BIND, processes=2, threads=4,
               pidfile=None, logfile=None, uwsgi=None):
    uwsgi = uwsgi or shutil.which('uwsgi', path=os.path.dirname(
        sys.executable)) or shutil.which('uwsgi')
    if not uwsgi:
        raise SystemExit('fedex-api: uwsgi is not installed (pip install '
                         'uwsgi, or apt-get install uwsgi-plugin-python3)')
    argv = [uwsgi, '--http-socket', bind,
            '--module', 'fedex_manager.api.wsgi:application',
            '--virtualenv', sys.prefix,
            # Each worker builds its own app: the jobboard's ZooKeeper
            # client runs threads that a fork would not copy.
            '--lazy-apps',
            '--master', '--processes', str(processes),
            '--threads', str(threads), '--enable-threads',
            '--die-on-term', '--need-app', '--buffer-size', '65535',
            # NOTE: without it, --http-socket closes connections a client
            # session reuses and about half the calls of a batch fail with
            # ECONNRESET (shared/FACTS-openstack.md).
            '--add-header', 'Connection: close',
            '--env', 'FEDEX_API_CONFIG=%s' % ':'.join(
                os.path.abspath(p) for p in config_files)]
    if pidfile:
        argv += ['--pidfile', pidfile]
    if logfile:
        argv += ['--logto', logfile]
    return argv


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='fedex-api', description='Serve fedex-api under uwsgi.')
    parser.add_argument('--config-file', action='append', required=True,
                        help='fedex-api.conf (repeatable).')
    parser.add_argument('--bind', default=DEFAULT_BIND,
                        help='HOST:PORT to listen on (default %(default)s).')
    parser.add_argument('--processes', type=int, default=2)
    parser.add_argument('--threads', type=int, default=4)
    parser.add_argument('--pidfile')
    parser.add_argument('--logfile')
    parser.add_argument('--print-command', action='store_true',
                        help='Print the uwsgi command instead of running it.')
    parser.add_argument('--db-sync', action='store_true',
                        help='Create or upgrade the database schema first '
                             '(fedex-manage db sync).')
    args = parser.parse_args(argv)
    for path in args.config_file:
        if not os.path.isfile(path):
            parser.error('--config-file %s: no such file' % path)
    if args.db_sync:
        manage = shutil.which('fedex-manage', path=os.path.dirname(
            sys.executable)) or 'fedex-manage'
        argv_ = [manage]
        for path in args.config_file:
            argv_ += ['--config-file', path]
        if subprocess.run(argv_ + ['db', 'sync']).returncode != 0:
            raise SystemExit('fedex-api: fedex-manage db sync failed')
    cmd = uwsgi_argv(args.config_file, args.bind, args.processes,
                     args.threads, args.pidfile, args.logfile)
    if args.print_command:
        print(' '.join(cmd))
        return 0
    os.execv(cmd[0], cmd)
