"""The one exception hierarchy of the project.

Every error carries a message naming the thing that failed (site, pool, image,
snapshot, daemon, file) and, where it helps, what to do about it.
"""


class FedexException(Exception):
    """Root of every error raised by this project.

    Subclasses set ``message``, a %-template filled from keyword arguments.
    ``cause`` keeps the underlying exception for logs and callers.
    """

    message = "An unknown error occurred."

    def __init__(self, message=None, cause=None, **kwargs):
        self.kwargs = kwargs
        self.cause = cause
        if message is None:
            try:
                message = self.message % kwargs
            except (KeyError, TypeError):
                # NOTE: a wrong template must never hide the original error.
                message = '%s (%s)' % (self.message, kwargs)
        self.msg = message
        super().__init__(message)


# --- Ceph and RBD ---------------------------------------------------------

class CephError(FedexException):
    message = "%(site)s: %(operation)s failed on %(target)s: %(reason)s"


class CephBindingsMissing(FedexException):
    message = ("the Ceph Python bindings are missing: %(module)s cannot be "
               "imported; install Debian's %(package)s (not on PyPI; "
               "tools/link_ceph_bindings.py links it into a virtualenv)")


class ClusterConnectError(CephError):
    message = ("%(site)s: cannot connect to the Ceph cluster with conf %(conf)s "
               "as client.%(client)s: %(reason)s")


class PoolNotFound(CephError):
    message = "%(site)s: pool %(pool)s does not exist"


class ImageNotFound(CephError):
    message = "%(site)s: image %(target)s does not exist"


class ImageExists(CephError):
    message = "%(site)s: image %(target)s already exists"


class ImageBusy(CephError):
    message = "%(site)s: image %(target)s is busy (%(reason)s)"


class SnapshotNotFound(CephError):
    message = "%(site)s: snapshot %(target)s does not exist"


class SnapshotExists(CephError):
    message = "%(site)s: snapshot %(target)s already exists"


class GroupNotFound(CephError):
    message = "%(site)s: group %(target)s does not exist"


class GroupExists(CephError):
    message = "%(site)s: group %(target)s already exists"


class CephPermissionDenied(CephError):
    message = ("%(site)s: permission denied for %(operation)s on %(target)s; "
               "check the cephx caps of the client")


class CephNoSpace(CephError):
    message = ("%(site)s: no space for %(operation)s on %(target)s "
               "(pool full or over quota): %(reason)s")


class InvalidExtent(FedexException):
    message = ("%(target)s: range offset=%(offset)d length=%(length)d lies "
               "outside the image (size %(size)d)")


# --- the sandbox ----------------------------------------------------------

class SandboxError(FedexException):
    message = "sandbox: %(reason)s"


class PackageMissing(SandboxError):
    message = ("sandbox: %(program)s is not installed; run "
               "'apt-get install -y %(package)s' (or tools/install.sh)")


class PortInUse(SandboxError):
    message = ("%(site)s: %(daemon)s cannot start: port %(port)d on "
               "%(address)s is in use%(holder)s; stop that process or pick "
               "another --base-port")


class PortsEphemeral(SandboxError):
    message = ("sandbox: its ports %(first)d-%(last)d reach this machine's "
               "ephemeral range (%(low)d-%(high)d), where the kernel picks "
               "ports for outgoing connections, so any client may hold one "
               "of them; pick a --base-port (or $FEDEX_SANDBOX_BASE_PORT) "
               "of at most %(most)d")


class DiskFull(SandboxError):
    message = ("sandbox: only %(free_mib)d MiB free in %(path)s, %(need_mib)d "
               "MiB needed; free some space or point --sandbox-dir elsewhere")


class DaemonFailed(SandboxError):
    message = "%(site)s: %(daemon)s %(reason)s; see %(log)s%(tail)s"


class NotOurProcess(SandboxError):
    message = ("%(site)s: pid file %(pidfile)s names pid %(pid)d, which is "
               "not our %(daemon)s (it runs: %(cmdline)s); left it alone")


class SandboxNotReady(SandboxError):
    message = "%(site)s: %(reason)s; run 'fedex-sandbox up' (log: %(log)s)"


# --- shipments and shipping devices -----------------------------------------

class ShipmentError(FedexException):
    message = "shipment %(shipment)s: %(reason)s"


class VerificationFailed(ShipmentError):
    """Data or metadata does not match what was shipped: never imported."""
    message = "shipment %(shipment)s: verification failed: %(reason)s"


class ManifestTampered(VerificationFailed):
    message = ("shipment %(shipment)s: the manifest on %(device)s fails "
               "authentication: it was altered after it was written")


class ManifestDigestMismatch(VerificationFailed):
    message = ("shipment %(shipment)s: manifest digest %(actual)s does not "
               "match the digest recorded at seal, %(expected)s")


class ChunkCorrupt(VerificationFailed):
    message = ("shipment %(shipment)s: chunk %(chunk)s of image %(image)s at "
               "offset %(offset)d is damaged and cannot be rebuilt: %(reason)s")


class ImageDigestMismatch(VerificationFailed):
    message = ("shipment %(shipment)s: image %(image)s@%(snapshot)s "
               "%(where)s has digest %(actual)s, the manifest says "
               "%(expected)s")


class WrongKey(ShipmentError):
    message = ("shipment %(shipment)s: the key from %(store)s is not the key "
               "of this shipment")


class KeyMissing(ShipmentError):
    message = ("shipment %(shipment)s: no key in %(store)s; the key never "
               "travels with the devices: copy it from the sending site's "
               "key store")


class DevicesMissing(ShipmentError):
    message = ("shipment %(shipment)s: devices %(missing)s are missing or "
               "unreadable; parity covers %(parity)d of %(total)d devices")


class MixedShipments(ShipmentError):
    message = ("devices of different shipments were given together: "
               "%(detail)s")


class NotADevice(ShipmentError):
    message = "%(path)s is not a shipping device of this project: %(reason)s"


class DeviceFull(ShipmentError):
    message = ("shipment %(shipment)s: device %(device)s is full (%(reason)s); "
               "progress is saved: free space or replace the device, then "
               "run the same command again")


class ShipmentSealed(ShipmentError):
    message = ("shipment %(shipment)s is sealed: no more writes to its "
               "devices")


class DestinationExists(ShipmentError):
    message = ("shipment %(shipment)s: destination image %(target)s already "
               "exists at %(site)s with other content; remove it or import "
               "under another pool")


# --- the LSRP wire protocol ---------------------------------------------------

class ProtocolError(FedexException):
    """A peer sent something the protocol does not allow.

    ``code`` is the error code sent back in an ERROR frame.
    """
    message = "LSRP protocol error %(code)s: %(reason)s"

    def __init__(self, message=None, cause=None, **kwargs):
        self.code = kwargs.get('code', 'BAD_FRAME')
        super().__init__(message, cause, **kwargs)


class StaleSession(ProtocolError):
    message = ("LSRP protocol error %(code)s: disk %(disk)s: session "
               "%(session)d is not the current session %(current)d")


class InvalidState(FedexException):
    message = "%(what)s: cannot go from %(old)s to %(new)s"


class RemoteError(FedexException):
    """The peer answered with an ERROR frame."""
    message = "%(peer)s refused %(request)s: %(code)s: %(reason)s"

    def __init__(self, message=None, cause=None, **kwargs):
        self.code = kwargs.get('code')
        # A terminal's message repeats the code ("LSRP protocol error
        # NOT_ALLOWED: ..."): said once is enough.
        echo = 'LSRP protocol error %s: ' % self.code
        if str(kwargs.get('reason', '')).startswith(echo):
            kwargs['reason'] = kwargs['reason'][len(echo):]
        super().__init__(message, cause, **kwargs)


class ConnectionClosed(FedexException):
    message = "connection to %(peer)s closed%(detail)s"


class TerminalUnreachable(FedexException):
    """No connection to another terminal's lsrp-server (retried)."""
    message = "terminal %(peer)s: unreachable: %(reason)s"


class TerminalRefused(FedexException):
    """The TLS handshake with another terminal failed (not retried)."""
    message = "terminal %(peer)s: %(reason)s"


# --- the shipment manager (fedex_manager) --------------------------------------

class ManagerError(FedexException):
    message = "manager: %(reason)s"


class InvalidTransition(ManagerError):
    """A state machine refused an event: names both states."""
    message = ("%(kind)s %(id)s: cannot go from %(current)s to %(target)s "
               "(%(reason)s)")


class NotFound(ManagerError):
    message = "%(kind)s %(id)s does not exist"


class Conflict(ManagerError):
    message = "%(kind)s %(id)s: %(reason)s"


class InvalidInput(ManagerError):
    message = "invalid %(field)s: %(reason)s"


class TerminalUnavailable(ManagerError):
    message = ("terminal %(terminal)s did not answer %(operation)s: "
               "%(reason)s; the migration waits and retries")


class OperationFailed(ManagerError):
    message = ("terminal %(terminal)s: %(operation)s %(op_id)s failed: "
               "%(reason)s")


class CustodyMismatch(ManagerError):
    message = ("shipment %(shipment)s: custody check failed: %(reason)s; "
               "nothing is imported from these devices")


class KeyManagerError(ManagerError):
    message = "key %(key)s: %(reason)s"


class CourierError(ManagerError):
    message = "courier %(courier)s: %(reason)s"


class ServiceFailed(SandboxError):
    """A service of the sandbox's mini-cloud did not start or answer."""
    message = "sandbox: %(service)s %(reason)s; see %(log)s%(tail)s"


# --- the planner and fedex-api ------------------------------------------------

class PlanCannotConverge(FedexException):
    message = ("plan cannot converge: %(what)s: writes of %(write_rate)s "
               "while the WAN carries %(bandwidth)s; a live copy never catches up "
               "with writes at or above the bandwidth: lower the write rate "
               "(throttle the guests, fewer VMs at once) or raise the "
               "bandwidth")


class InvalidPlanInput(FedexException):
    message = "plan input %(field)s: %(reason)s"


class PolicyNotAuthorized(FedexException):
    message = ("policy does not allow %(action)s for this token (roles: "
               "%(roles)s, project %(project)s)")


class PreflightFailed(FedexException):
    """A migration that cannot work: every reason, so all are fixed at once."""

    message = "the migration cannot work: %(reasons)s"

    def __init__(self, reasons):
        self.reasons = list(reasons)
        super().__init__(reasons='; '.join(self.reasons))


# --- Nova and Cinder cutover (nova_fedex, cinder_fedex) -------------------

class CutoverError(FedexException):
    message = ("server %(server)s: FedEx cutover of migration %(migration)s "
               "failed: %(reason)s")


class CutoverRefused(CutoverError):
    message = ("server %(server)s: FedEx cutover refused: %(reason)s. The "
               "server stays where it is; nothing was changed")


class FinalDeltaFailed(CutoverError):
    message = ("server %(server)s: the final delta of migration "
               "%(migration)s to terminal %(terminal)s failed: %(reason)s")


class ManagerUnavailable(FedexException):
    message = ("the FedEx migration service (fedex-api, service type "
               "vm-shipping) could not answer %(request)s: %(reason)s")


class VolumeInMigration(FedexException):
    message = ("volume %(volume)s is in FedEx migration %(migration)s: "
               "%(operation)s is refused until the migration ends or is "
               "aborted (openstack fedex migration show %(migration)s)")


class SandboxPluginError(SandboxError):
    message = ("sandbox: plugin %(name)s of entry point group %(group)s "
               "%(reason)s; reinstall the project (./tools/install.sh) so "
               "that its entry points are registered")


class NovaRefused(ManagerError):
    """Nova answered os-migrateLive with a refusal (4xx): nothing started."""
    message = ("Nova refused the live migration of server %(server)s to "
               "%(host)s: %(reason)s")


class NoDestinationHost(ManagerError):
    """A cutover without a named host found none at the destination."""
    message = ("no destination host for the cutover in Nova aggregate "
               "%(aggregate)s: %(reason)s; name one (openstack server "
               "migrate --live-migration --fedex --host HOST) or make room "
               "there")


class PeerGone(ManagerError):
    """A catch-up round's destination terminal stayed unreachable."""
    message = ("migration %(migration)s: %(operation)s: destination terminal "
               "%(terminal)s unreachable for %(seconds)d s ([conductor] "
               "peer_patience): %(reason)s; bring its lsrp-agent back, then "
               "retry the migration")


class FinalStateMismatch(CutoverError):
    # (The disks first: Nova keeps 255 characters of an instance fault.)
    message = ("disks differ from the source's final state after the FedEx "
               "cutover of migration %(migration)s: %(reason)s. Server "
               "%(server)s runs at the destination on them; the source's "
               "images are kept (retention): compare them before they are "
               "removed")
