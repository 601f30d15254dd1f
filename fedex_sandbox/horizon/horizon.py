"""Run Horizon with this plugin under uwsgi, on 127.0.0.1.

The sandbox's mini-cloud serves it on its port +281
(:mod:`fedex_sandbox.services.horizon` starts it with the cloud):
``python -m fedex_sandbox.horizon.horizon serve --dir D --port P
--keystone URL`` links the static files under D/static once, compresses
the pages' CSS and JavaScript offline (as deployments do), then becomes
uwsgi (the same pid, in the foreground). It runs in the Python environment
that has Horizon (``.venv-openstack``, made by ``tools/install.sh
--openstack``).
"""

import argparse
import os
import shutil
import subprocess
import sys

# The port offset of Horizon inside a sandbox (COMMON.md's shared table).
PORT_OFFSET = 281
SETTINGS = 'fedex_sandbox.horizon.settings'


class HorizonError(Exception):
    pass


class Horizon(object):

    def __init__(self, run_dir, port, keystone_url, python=sys.executable):
        self.dir = os.path.abspath(run_dir)
        self.port = port
        self.keystone_url = keystone_url
        self.python = python
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
                '--module', 'fedex_sandbox.horizon.wsgi:application',
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
                '--add-header', 'Connection: close']

    def collect_static(self):
        """Link Horizon's and the plugins' static files under dir/static.

        Once per virtualenv: the links point into it, and uwsgi serves
        only what is inside it (``--static-safe``). A sandbox started
        from another checkout (another venv) gets them linked again;
        before, every page's images and scripts were 404s.
        """
        marker = os.path.join(self.dir, 'static', '.collected')
        venv = os.path.realpath(sys.prefix)
        try:
            with open(marker) as f:
                if f.read().strip() == venv:
                    return
        except FileNotFoundError:
            pass
        subprocess.run([self.python, '-m', 'django', 'collectstatic',
                        '--noinput', '--link', '--clear', '-v', '0'],
                       env=self.env, check=True)
        with open(marker, 'w') as f:
            f.write(venv + '\n')

    def compress(self):
        """Compile and compress the pages' CSS and JavaScript, offline.

        At every start, not once: a changed template or SCSS file of the
        plugin is then served as it is now.
        """
        subprocess.run([self.python, '-m', 'django', 'compress', '--force',
                        '-v', '0'], env=self.env, check=True)

    def serve(self):
        """Become uwsgi serving Horizon (does not return)."""
        os.makedirs(self.dir, exist_ok=True)
        self.collect_static()
        self.compress()
        argv = self.argv()
        os.execve(argv[0], argv, self.env)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m fedex_sandbox.horizon.horizon',
        description='Horizon with the FedEx panels under uwsgi.')
    parser.add_argument('command', choices=('serve',))
    parser.add_argument('--dir', required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--keystone', required=True, help="Keystone's v3 URL.")
    args = parser.parse_args(argv)
    try:
        Horizon(args.dir, args.port, args.keystone).serve()
    except (HorizonError, subprocess.CalledProcessError) as e:
        sys.exit('horizon: %s' % e)


if __name__ == '__main__':
    main()
