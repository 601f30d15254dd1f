"""A stand-in for Neutron: answers Nova's reads with empty collections.

Why a stand-in: the mini-cloud's guests have no network (``--nic none``), and
the real neutron-server would need its own agents (OVS/OVN or linuxbridge,
DHCP, metadata) that cannot run on this machine. But Nova's API is not usable
without a ``network`` endpoint: even ``server show`` fails with
EndpointNotFound. With ``--nic none`` Nova only ever GETs from Neutron
(ports of a device, security groups, networks), so every
``GET /v2.0/<collection>`` answers ``{"<collection>": []}``; anything else is
refused with 501 so that a test relying on networking fails loudly.

Run: ``python -m fedex_sandbox.services.neutron_stub --port N``.
"""

import argparse
import json
import socketserver
from wsgiref import simple_server


def application(environ, start_response):
    path = environ.get('PATH_INFO', '/').rstrip('/')
    method = environ['REQUEST_METHOD']
    parts = [p for p in path.split('/') if p]
    if method == 'GET' and not parts:
        body = {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                              'links': []}]}
        status = '200 OK'
    elif method == 'GET' and parts[0] == 'v2.0' and len(parts) == 1:
        body = {'resources': []}
        status = '200 OK'
    elif method == 'GET' and parts[0] == 'v2.0' and len(parts) == 2:
        collection = parts[1].split('.')[0]
        body = {collection: []}
        status = '200 OK'
    else:
        body = {'NeutronError': {
            'type': 'NotImplemented',
            'message': 'fedex-sandbox neutron stand-in: %s %s is not '
                       'supported (guests run with --nic none)' % (
                           method, path)}}
        status = '501 Not Implemented'
    data = json.dumps(body).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))])
    return [data]


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--marker', default='',
                        help='Ignored: names the sandbox in ps output.')
    args = parser.parse_args(argv)
    server = simple_server.make_server(args.host, args.port, application,
                                       server_class=_Server,
                                       handler_class=_Quiet)
    server.serve_forever()


if __name__ == '__main__':
    main()
