"""Options of cinder_fedex (in each backend's section of cinder.conf)."""


def list_opts():
    from cinder_fedex.volume.drivers import fedex_rbd

    return [('backend_defaults', fedex_rbd.fedex_opts)]
