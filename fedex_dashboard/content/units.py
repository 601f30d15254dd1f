"""Human figures for bytes, rates and durations."""


def size(n):
    if n is None:
        return '-'
    n = float(n)
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if abs(n) < 1024 or unit == 'TiB':
            return ('%d %s' % (n, unit)) if unit == 'B' else \
                '%.1f %s' % (n, unit)
        n /= 1024


def rate(bps):
    return '-' if not bps else size(bps) + '/s'


def duration(seconds):
    if seconds is None:
        return '-'
    if seconds < 10:
        return '%.1fs' % seconds
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return '%dd %dh' % (days, hours)
    if hours:
        return '%dh %02dm' % (hours, minutes)
    if minutes:
        return '%dm %02ds' % (minutes, secs)
    return '%ds' % secs
