"""Run Horizon with this plugin under uwsgi, on 127.0.0.1.

For the sandbox's mini-cloud (port offset +281 of the sandbox) and the
browser tests: ``python -m nova_fedex.dashboard.server.horizon up --dir D
--port P --keystone URL`` collects the static files once, starts uwsgi in
the background (pid in D/uwsgi.pid, log in D/uwsgi.log) and waits until
the login page answers; ``down --dir D`` stops it. It runs in the Python
environment that has Horizon (``tox -e browser`` makes one).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

# The port offset of Horizon inside a sandbox (COMMON.md's shared table).
PORT_OFFSET = 281
SETTINGS = 'nova_fedex.dashboard.server.settings'


class HorizonError(Exception):
    pass


class Horizon(object):

    def __init__(self, run_dir, port, keystone_url, python=sys.executable):
        self.dir = os.path.abspath(run_dir)
        self.port = port
        self.keystone_url = keystone_url
        self.python = python
        self.pidfile = os.path.join(self.dir, 'uwsgi.pid')
        self.log = os.path.join(self.dir, 'uwsgi.log')
        self.url = 'http://127.0.0.1:%d' % port

    @property
    def env(self):
        return dict(os.environ, DJANGO_SETTINGS_MODULE=SETTINGS,
                    FEDEX_HORIZON_DIR=self.dir,
                    FEDEX_HORIZON_KEYSTONE_URL=self.keystone_url)

    def argv(self):
        uwsgi = os.path.join(os.path.dirname(self.python), 'uwsgi')
        if not os.path.exists(uwsgi):
            uwsgi = shutil.which('uwsgi')
        if not uwsgi:
            raise HorizonError('uwsgi is not installed next to %s: pip '
                               'install uwsgi' % self.python)
        return [uwsgi, '--http-socket', '127.0.0.1:%d' % self.port,
                '--module', 'nova_fedex.dashboard.server.wsgi:application',
                '--virtualenv', sys.prefix,
                '--static-map', '/static=%s' % os.path.join(self.dir,
                                                            'static'),
                # collectstatic --link: the files are links into the venv.
                '--static-safe', os.path.realpath(sys.prefix),
                '--master', '--processes', '1', '--threads', '4',
                '--enable-threads', '--die-on-term', '--need-app',
                '--buffer-size', '65535',
                # See shared/FACTS-openstack.md: keep-alive over
                # --http-socket resets half of a client's requests.
                '--add-header', 'Connection: close',
                '--pidfile', self.pidfile, '--logto', self.log]

    def collect_static(self):
        """Link Horizon's and the plugins' static files under dir/static."""
        marker = os.path.join(self.dir, 'static', '.collected')
        if os.path.exists(marker):
            return
        subprocess.run([self.python, '-m', 'django', 'collectstatic',
                        '--noinput', '--link', '-v', '0'], env=self.env,
                       check=True)
        open(marker, 'w').close()

    def pid(self):
        try:
            with open(self.pidfile) as f:
                pid = int(f.read().strip())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def answers(self):
        try:
            with urllib.request.urlopen(self.url + '/auth/login/',
                                        timeout=30) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def up(self, timeout=300):
        os.makedirs(self.dir, exist_ok=True)
        if self.pid() and self.answers():
            return self
        if self.answers():
            raise HorizonError('another server answers on %s: stop it first'
                               % self.url)
        self.collect_static()
        with open(self.log, 'ab') as log:
            subprocess.Popen(self.argv(), env=self.env, stdout=log,
                             stderr=log, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.answers():
                return self
            time.sleep(1)
        raise HorizonError('Horizon did not answer on %s within %d s; see %s'
                           % (self.url, timeout, self.log))

    def down(self, timeout=30):
        pid = self.pid()
        if not pid:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.pid():
            time.sleep(0.2)
        if self.pid():
            os.kill(pid, signal.SIGKILL)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m nova_fedex.dashboard.server.horizon',
        description='Horizon with the FedEx panels under uwsgi.')
    parser.add_argument('command', choices=('up', 'down'))
    parser.add_argument('--dir', required=True)
    parser.add_argument('--port', type=int)
    parser.add_argument('--keystone', help="Keystone's v3 URL.")
    args = parser.parse_args(argv)
    if args.command == 'up' and not (args.port and args.keystone):
        parser.error('up needs --port and --keystone')
    h = Horizon(args.dir, args.port or 0, args.keystone or '')
    try:
        if args.command == 'up':
            h.up()
            print(h.url)
        else:
            h.down()
    except (HorizonError, subprocess.CalledProcessError) as e:
        sys.exit('horizon: %s' % e)


if __name__ == '__main__':
    main()
