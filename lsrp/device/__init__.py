"""Shipping devices: the seed of each disk, carried by courier.

A *shipment* is a set of images captured at one snapshot and written onto a
*device set* of N directories (one per portable disk). The format is specified
in ``doc/source/device-format.rst``. Where things live:

* :mod:`~lsrp.device.keystore` - where per-shipment keys are kept (never on
  a device).
* :mod:`~lsrp.device.crypto` - key derivation, chunk and manifest sealing.
* :mod:`~lsrp.device.erasure` - parity across devices (XOR, or ISA-L
  Reed-Solomon through pyeclib).
* :mod:`~lsrp.device.deviceset` - labels, stripe files and manifests on the
  device directories.
* :mod:`~lsrp.device.manifest` - what a shipment holds.
* :mod:`~lsrp.device.export` / :mod:`~lsrp.device.importer` - the two ends,
  both resumable; :mod:`~lsrp.device.verify` checks a set without Ceph.
* :mod:`~lsrp.device.writer` / :mod:`~lsrp.device.reader` - chunks to and
  from the stripes; :mod:`~lsrp.device.layers` - an image snapshot as the
  overlay of its runs, and its digest; :mod:`~lsrp.device.serial` - an
  ordered thread (the image digest beside the pipeline).
"""
