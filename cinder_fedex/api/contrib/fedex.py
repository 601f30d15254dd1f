"""The os-fedex-* admin actions on volumes, and the guards of shipped volumes.

Loaded by cinder-api with ``[DEFAULT] osapi_volume_extension =
cinder.api.contrib.standard_extensions`` plus
``osapi_volume_extension = cinder_fedex.api.contrib.fedex.Fedex``.

``POST /v3/{project}/volumes/{id}/action`` with one of:

* ``{"os-fedex-mark": {"migration": M, "site": A, "peer_site": B,
  "peer_host": "hostB@backendB#pool"}}``
* ``{"os-fedex-unmark": {}}``
* ``{"os-fedex-cutover": {}}`` (or ``{"host": ...}``): the peer backend
  owns the volume from now on;
* ``{"os-fedex-revert": {}}``: back to the previous backend.

While a volume is marked, extend, revert to snapshot, retype and delete are
refused with 409 and a message naming the migration.
"""

from http import HTTPStatus

import webob

from cinder.api import extensions
from cinder.api.openstack import wsgi
from cinder import exception as cinder_exception
from cinder import objects

from cinder_fedex import ownership
from cinder_fedex import policies
from lsrp import exception


def _volume(context, id):
    try:
        return objects.Volume.get_by_id(context, id)
    except cinder_exception.VolumeNotFound as e:
        raise webob.exc.HTTPNotFound(explanation=e.msg)


def _body(body, action, *required):
    args = body.get(action)
    if not isinstance(args, dict):
        raise webob.exc.HTTPBadRequest(
            explanation='%s takes an object' % action)
    missing = [k for k in required if not args.get(k)]
    if missing:
        raise webob.exc.HTTPBadRequest(explanation='%s needs %s' % (
            action, ', '.join(missing)))
    return args


class FedexVolumeController(wsgi.Controller):

    def _act(self, req, id, action, func, *args):
        context = req.environ['cinder.context']
        volume = _volume(context, id)
        policies.authorize(context, action, volume)
        try:
            func(context, volume, *args)
        except cinder_exception.InvalidVolume as e:
            raise webob.exc.HTTPConflict(explanation=e.msg)
        return webob.Response(status_int=HTTPStatus.ACCEPTED)

    @wsgi.action('os-fedex-mark')
    def _mark(self, req, id, body):
        args = _body(body, 'os-fedex-mark', 'migration', 'site', 'peer_site',
                     'peer_host')
        return self._act(req, id, 'mark', ownership.mark, args['migration'],
                         args['site'], args['peer_site'], args['peer_host'])

    @wsgi.action('os-fedex-unmark')
    def _unmark(self, req, id, body):
        return self._act(req, id, 'unmark', ownership.unmark)

    @wsgi.action('os-fedex-cutover')
    def _cutover(self, req, id, body):
        args = _body(body, 'os-fedex-cutover')
        return self._act(req, id, 'cutover', ownership.cutover,
                         args.get('host'))

    @wsgi.action('os-fedex-revert')
    def _revert(self, req, id, body):
        return self._act(req, id, 'revert', ownership.revert)

    # --- guards: pre-processing extensions of Cinder's own actions ---------

    @staticmethod
    def _guard(req, id, operation):
        context = req.environ['cinder.context']
        try:
            volume = objects.Volume.get_by_id(context, id)
        except cinder_exception.VolumeNotFound:
            return        # Cinder's own handler answers 404
        try:
            ownership.refuse_if_shipped(volume, operation)
        except exception.VolumeInMigration as e:
            raise webob.exc.HTTPConflict(explanation=str(e))

    @wsgi.extends(action='os-extend')
    def _extend(self, req, id, body):
        self._guard(req, id, 'extend')
        yield

    @wsgi.extends(action='revert')
    def _revert_to_snapshot(self, req, id, body):
        self._guard(req, id, 'revert to snapshot')
        yield

    @wsgi.extends(action='os-retype')
    def _retype(self, req, id, body):
        self._guard(req, id, 'retype')
        yield

    @wsgi.extends
    def delete(self, req, id):
        self._guard(req, id, 'delete')
        yield


class Fedex(extensions.ExtensionDescriptor):
    """Migration over FedEx: shipped volumes and their ownership move."""

    name = 'Fedex'
    alias = 'os-fedex'
    updated = '2026-11-24T00:00:00+00:00'

    def get_controller_extensions(self):
        return [extensions.ControllerExtension(self, 'volumes',
                                               FedexVolumeController())]
