"""Where the mini-cloud's compute hosts are: names, indexes, addresses.

A pure function of the sandbox's sites and base port, kept apart from the
cloud that runs the hosts (services/cloud.py) so that the WAN
(fedex_sandbox/wan.py) can give each host its face without importing the
cloud.
"""

HOSTS_PER_SITE = 2


def layout(site_names):
    """(site, number, index) of every host, in the cloud's order.

    ``number`` counts a site's hosts from 1, ``index`` all hosts from 0.
    """
    return [(site, n + 1, i * HOSTS_PER_SITE + n)
            for i, site in enumerate(site_names)
            for n in range(HOSTS_PER_SITE)]


def name(site, number):
    return '%s-h%d' % (site, number)


def address(base_port, index):
    """Host ``index``'s own loopback address, unique to the base port."""
    return '127.%d.%d.%d' % ((base_port >> 8) & 255, base_port & 255,
                             10 + index)
