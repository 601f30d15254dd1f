"""``lsrp-agent``: a terminal's side of the manager.

(Past 400 lines by its service wrapper; the operations themselves are in
:mod:`fedex_manager.agent.ops`.)

One per terminal. It serves the RPC topic ``fedex-terminal.<name>`` (start,
status, cancel of operations; see :mod:`fedex_manager.agent.ops`), runs
the terminal's lsrp-server (LSRP over TLS, for catch-up rounds from other
terminals) in the same process, registers the devices plugged into its
slots and sends heartbeats.

Operations are recorded in ``<state_dir>/ops/<op_id>.json`` before they
start. A start for an operation that is running or done returns its state
(a resumed flow asks again: nothing runs twice); one that failed, or was
cut short by the agent's death (``kill -9``), runs again, and the engine
resumes it from its own journal.

It runs under oslo.service's launcher as ``fedex-conductor`` does
(:mod:`fedex_manager.cmd.launcher`): ``SIGTERM`` stops it, ``SIGHUP``
starts it again with the mutable options read again.

    lsrp-agent --config-file terminal.conf
"""

import asyncio
import ctypes
import datetime
import json
import os
import socket
import ssl
import sys
import threading
import time
import traceback

from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import service as oslo_service

from fedex_manager.agent import ops as ops_mod
from fedex_manager.cmd import launcher
from fedex_manager import keys as keys_mod
from fedex_manager import rpc
from lsrp.device import keystore as engine_keystore
from lsrp import exception
from lsrp import opts as lsrp_opts
from lsrp.rbd import Cluster
from lsrp.server import service
from lsrp import tls

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

agent_opts = [
    cfg.StrOpt('name', help='This terminal\'s name (default: [server] '
                            'name).'),
    cfg.StrOpt('site', default='site-a', help='The site of this terminal.'),
    cfg.StrOpt('slots_dir',
               help='Directory whose subdirectories are the device slots '
                    '(a mounted device each); registered with the manager.'),
    cfg.IntOpt('heartbeat_interval', default=10, min=1,
               help='Seconds between heartbeats to the manager.'),
    cfg.StrOpt('lsrp_address',
               help='HOST:PORT other terminals reach this lsrp-server at '
                    '(default: [server] host:port).'),
    cfg.IntOpt('device_capacity_mib', default=0, min=0,
               help='The capacity this terminal reports for each device, '
                    'in MiB; 0: the size of the device\'s filesystem. '
                    '(The sandbox\'s device directories share one '
                    'filesystem: its tests give them a size.)'),
    cfg.BoolOpt('serve_lsrp', default=True,
                help='Run this terminal\'s lsrp-server in the agent.'),
]


def register_opts(conf):
    conf.register_opts(agent_opts, group='agent')
    lsrp_opts.register_opts(conf)
    lsrp_opts.register_shipment_opts(conf)
    conf.register_opts(lsrp_opts.server_opts, group='server')
    keys_mod.register_opts(conf)
    rpc.register_opts(conf)


class OpStore(object):
    """The agent's record of its operations, one JSON file each."""

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def _path(self, op_id):
        if not op_id or '/' in op_id or op_id.startswith('.'):
            raise exception.InvalidInput(field='op_id', reason=repr(op_id))
        return os.path.join(self.directory, op_id + '.json')

    def get(self, op_id):
        try:
            with open(self._path(op_id)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def put(self, record):
        path = self._path(record['op_id'])
        engine_keystore_tmp = path + '.tmp'
        with open(engine_keystore_tmp, 'w') as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(engine_keystore_tmp, path)


class Terminal(object):
    """What operations need: the cluster, the state dir, keys, TLS."""

    def __init__(self, conf):
        self.conf = conf
        self.name = conf.agent.name or conf.server.name
        self.state_dir = conf.shipment.state_dir
        self.key_store = keys_mod.get_store(conf)
        sh = conf.shipment
        self.device_options = {'shard_size': sh.shard_size,
                               'zstd_level': sh.zstd_level,
                               'workers': sh.workers,
                               'checkpoint_bytes': sh.checkpoint_mib << 20}
        self._cluster = None
        self._lock = threading.Lock()

    def cluster(self):
        with self._lock:
            if self._cluster is None:
                c = self.conf.ceph
                cluster = Cluster(c.conf_file, c.keyring,
                                  client=c.client_name, site=c.site_name,
                                  connect_timeout=c.connect_timeout,
                                  op_timeout=c.op_timeout,
                                  options={'rbd_cache': 'false'})
                cluster.connect()
                self._cluster = cluster
            return self._cluster

    def tls_files(self):
        s = self.conf.server
        return s.tls_ca, s.tls_cert, s.tls_key

    def slots(self):
        root = self.conf.agent.slots_dir
        if not root or not os.path.isdir(root):
            return []
        return [os.path.join(root, d) for d in sorted(os.listdir(root))
                if os.path.isdir(os.path.join(root, d))]


class AgentEndpoint(object):
    """The RPC methods the manager calls."""

    target = None

    def __init__(self, terminal, store, manager):
        self.terminal, self.store, self.manager = terminal, store, manager
        self.running = {}       # op_id -> (thread, Reporter)
        self.lock = threading.Lock()

    def ping(self, ctxt):
        return {'terminal': self.terminal.name, 'time': time.time()}

    def status(self, ctxt, op_id):
        with self.lock:
            return self._status(op_id)

    def _status(self, op_id):
        rec = self.store.get(op_id)
        if rec is None:
            return {'op_id': op_id, 'state': 'UNKNOWN'}
        if rec['state'] == 'RUNNING' and op_id not in self.running:
            # Started by an agent that died: it runs again on start().
            rec['state'] = 'INTERRUPTED'
        return rec

    def start(self, ctxt, op_id, kind, params):
        if kind not in ops_mod.OPERATIONS:
            raise exception.InvalidInput(field='kind', reason='%r; known: '
                                         '%s' % (kind, ', '.join(sorted(
                                             ops_mod.OPERATIONS))))
        with self.lock:
            rec = self._status(op_id)
            if rec['state'] in ('RUNNING', 'DONE'):
                return rec
            attempts = rec.get('attempts', 0) + 1
            rec = {'op_id': op_id, 'kind': kind, 'state': 'RUNNING',
                   'attempts': attempts, 'started_at': time.time(),
                   'result': None, 'error': None}
            self.store.put(rec)
            reporter = ops_mod.Reporter(op_id, self.manager.progress)
            thread = threading.Thread(target=self._run, name=op_id,
                                      args=(op_id, kind, params, reporter),
                                      daemon=True)
            self.running[op_id] = (thread, reporter)
            thread.start()
            LOG.info('%s: started %s %s (attempt %d)', self.terminal.name,
                     kind, op_id, attempts)
            return rec

    def cancel(self, ctxt, op_id):
        with self.lock:
            entry = self.running.get(op_id)
            if entry:
                entry[1].cancelled = True

    def _run(self, op_id, kind, params, reporter):
        try:
            result = ops_mod.OPERATIONS[kind](self.terminal, params,
                                              reporter)
            state, error = 'DONE', None
        except Exception as e:  # noqa: every failure is reported
            LOG.error('%s: %s %s failed: %s\n%s', self.terminal.name, kind,
                      op_id, e, traceback.format_exc())
            result, state = None, 'ERROR'
            error = '%s: %s' % (type(e).__name__, e)
        with self.lock:
            rec = self.store.get(op_id) or {'op_id': op_id, 'kind': kind}
            rec.update(state=state, result=result, error=error,
                       finished_at=time.time(),
                       bytes_done=reporter.bytes_done)
            self.store.put(rec)
            self.running.pop(op_id, None)
        reporter.report(force=True)
        self.manager.finished(op_id, state, result, error)


class Agent(object):

    def __init__(self, conf):
        self.conf = conf
        self.terminal = Terminal(conf)
        self.store = OpStore(os.path.join(self.terminal.state_dir, 'ops'))
        self.manager = self.endpoint = self.rpc_server = None
        self.stop_event = threading.Event()

    def info(self):
        # When the slots were listed: the manager ignores a device listed
        # here before it was recorded at another terminal (a late cast).
        scanned_at = datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None).isoformat() + 'Z'
        devices = []
        for path in self.terminal.slots():
            devices.append({'serial': ops_mod.device_serial(path),
                            'path': path, 'slot': os.path.basename(path),
                            'capacity_bytes': self.conf.agent.
                            device_capacity_mib << 20 or _capacity(path)})
        s = self.conf.server
        return {'site': self.conf.agent.site, 'scanned_at': scanned_at,
                'slots_dir': self.conf.agent.slots_dir,
                'lsrp_address': self.conf.agent.lsrp_address or
                '%s:%d' % (s.host, s.port),
                'rpc_topic': rpc.terminal_topic(self.terminal.name, self.conf),
                'devices': devices, 'running': sorted(
                    self.endpoint.running),
                # The shipment keys' ACLs name it (keys.restrict).
                'key_user_id': self.key_user_id()}

    def key_user_id(self):
        if getattr(self, '_key_user_id', None) is None:
            try:
                self._key_user_id = self.terminal.key_store.user_id() or ''
            except Exception as e:   # the next heartbeat asks again
                LOG.warning('%s: who am I at the key manager? %s',
                            self.terminal.name, e)
                return None
        return self._key_user_id or None

    def lsrp_accepting(self):
        """Whether this terminal's lsrp-server completes a TLS handshake.

        What a peer's catch-up round needs first: a heartbeat without it
        would call the terminal UP while a restarted server still
        recovers its rounds and does not listen yet.
        """
        s = self.conf.server
        host = '127.0.0.1' if s.host in ('', '0.0.0.0', '::') else s.host
        context = tls.client_context(*self.terminal.tls_files())
        try:
            with socket.create_connection((host, s.port), timeout=5) as raw:
                with context.wrap_socket(raw,
                                         server_hostname=self.terminal.name):
                    return True
        except (OSError, ssl.SSLError) as e:
            LOG.debug('%s: LSRP port %s:%d not accepting: %s',
                      self.terminal.name, host, s.port, e)
            return False

    def heartbeats(self):
        seen = False
        while not self.stop_event.is_set():
            info = self.info()
            if self.conf.agent.serve_lsrp:
                info['lsrp'] = 'UP' if self.lsrp_accepting() else 'DOWN'
                if info['lsrp'] == 'DOWN' and not seen:
                    # Not known to be up yet: stay silent until it is.
                    self.stop_event.wait(0.5)
                    continue
            seen = True
            self.manager.heartbeat(info)
            self.stop_event.wait(self.conf.agent.heartbeat_interval)

    def serve_lsrp(self):
        s, sh = self.conf.server, self.conf.shipment

        async def run():
            cluster = self.terminal.cluster() if s.rbd_sink else None
            server = service.TerminalServer(
                self.terminal.name, cluster, sh.state_dir,
                tls.server_context(s.tls_ca, s.tls_cert, s.tls_key),
                s.host, s.port, frame_timeout=s.frame_timeout,
                resume_timeout=s.resume_timeout,
                key_store=engine_keystore.FileKeyStore(sh.key_dir),
                device_options=self.terminal.device_options)
            await server.start()
            while not self.stop_event.is_set():
                await asyncio.sleep(0.5)
            await server.stop()
        asyncio.run(run())

    def start(self):
        # The messaging client and server are made here, in the process
        # that uses them: the launcher's worker, not its master.
        self.manager = rpc.ManagerAPI(self.terminal.name, self.conf)
        self.endpoint = AgentEndpoint(self.terminal, self.store,
                                      self.manager)
        topic = rpc.terminal_topic(self.terminal.name, self.conf)
        self.rpc_server = rpc.server([self.endpoint], topic,
                                     self.terminal.name, self.conf)
        self.rpc_server.start()
        threads = [threading.Thread(target=self.heartbeats, daemon=True)]
        if self.conf.agent.serve_lsrp:
            threads.append(threading.Thread(target=self.serve_lsrp,
                                            daemon=True))
        for t in threads:
            t.start()
        print('lsrp-agent %s: serving %s' % (self.terminal.name, topic),
              flush=True)

    def stop(self):
        # Running operations are not waited for: they run again when the
        # manager starts them again (see the module's docstring).
        self.stop_event.set()
        if self.rpc_server is not None:
            self.rpc_server.stop()
            self.rpc_server.wait()


class AgentService(oslo_service.Service):
    """The agent as an oslo.service service (see ``launcher``)."""

    def __init__(self, agent):
        super().__init__()
        self.agent = agent
        # Made in the launcher's master process, before it forks a worker.
        self.master_pid = os.getpid()

    def start(self):
        super().start()
        self.agent.start()

    def stop(self, graceful=False):
        if os.getppid() != self.master_pid != os.getpid():
            # The master was killed (kill -9): the worker goes at once, as
            # the agent did when it was one process. Stopping cleanly could
            # overlap with an agent started again meanwhile (its LSRP port,
            # its operations); a crash leaves nothing the next start does
            # not recover (operations run again from the engine's journal).
            os._exit(1)
        self.agent.stop()
        super().stop(graceful)

    def wait(self):
        self.agent.stop_event.wait()


def _capacity(path):
    try:
        st = os.statvfs(path)
        return st.f_blocks * st.f_frsize
    except OSError:
        return 0


def main(argv=None):
    try:
        ctypes.CDLL('libc.so.6').mallopt(-8, 2)  # see lsrp.cli
    except (OSError, AttributeError):
        pass
    logging.register_options(CONF)
    CONF.set_default('use_stderr', True)
    register_opts(CONF)
    CONF(sys.argv[1:] if argv is None else argv, project='lsrp',
         prog='lsrp-agent')
    launcher.setup_logging(CONF, 'lsrp-agent')
    return launcher.launch('lsrp-agent', AgentService(Agent(CONF)), CONF)


if __name__ == '__main__':
    sys.exit(main())
