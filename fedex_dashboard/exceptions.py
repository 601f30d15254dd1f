"""The dashboard's one exception, importable from settings (no Django)."""

# What a user can do about an error, by HTTP status.
ADVICE = {
    400: 'Correct the value named above and try again.',
    401: 'Your session has expired: log in again.',
    403: 'Your role does not allow this: ask an administrator or the '
         'project\'s owner.',
    404: 'It no longer exists: reload the page.',
    409: 'Its state does not allow this now: reload the page to see its '
         'current state.',
}
UNAVAILABLE = ('fedex-api did not answer: try again in a minute, or ask an '
               'operator to check the fedex-api service.')


class FedexAPIError(Exception):
    """An error of fedex-api (or of reaching it), ready to show to a user."""

    def __init__(self, what, status=None, details=()):
        self.status = status
        self.details = list(details)
        advice = ADVICE.get(status, UNAVAILABLE if status is None or
                            status >= 500 else '')
        text = what
        if self.details:
            text += ': ' + '; '.join(self.details)
        super().__init__(('%s. %s' % (text, advice)).strip())
