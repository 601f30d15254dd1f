"""Request and response helpers shared by the handlers."""

import json
import math
import re
import urllib.parse

import jsonschema
from oslo_config import cfg
from oslo_serialization import jsonutils
import webob

from fedex_manager.api import errors
from fedex_manager.db import api as db
from fedex_manager import policy
from lsrp import exception

CONF = cfg.CONF
SORT_DIRS = ('asc', 'desc')
# Levels of arrays and objects a body may nest: ours need 6; deeper ones
# would only exhaust the recursion of whatever walks them next.
MAX_DEPTH = 32
# Integers are stored in 64-bit columns (or JSON, which readers parse as
# 64-bit or double): a larger one cannot be what the caller means.
INT_RANGE = (-2 ** 63, 2 ** 63 - 1)
# Digits json.loads converts (Python refuses more than 4300 with a
# message about its own settings).
MAX_DIGITS = 40
# The part of a wrong value repeated in a message.
SHOWN = 60


def _whole(checker, instance):
    # 1.0 is an integer to JSON Schema; not to the columns and counts it
    # goes to (fedex_manager.options checks options the same way).
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_time(text):
    # What db.utcfromiso reads (ISO 8601, with a zone or a Z), and only
    # that: a time it cannot read would fail after the checks. Before
    # 1900 is a typo (and before MySQL's DATETIME).
    if isinstance(text, str) and db.utcfromiso(text).year < 1900:
        raise ValueError('%s is before 1900' % text)
    return True


def _pattern(validator, pattern, instance, schema):
    """``pattern``, its ``$`` the end of the text.

    As in JSON Schema's regex dialect; Python's also matches before a final
    newline.
    """
    if not validator.is_type(instance, 'string'):
        return
    if pattern.endswith('$') and not pattern.endswith('\\$'):
        pattern = pattern[:-1] + '\\Z'
    if not re.search(pattern, instance):
        yield jsonschema.ValidationError('%s is not %s' % (
            quoted(instance), schema.get('description') or
            'matched by %r' % schema['pattern']))


FORMATS = jsonschema.FormatChecker(formats=())
FORMATS.checks('date-time', raises=ValueError)(_is_time)
Validator = jsonschema.validators.extend(
    jsonschema.Draft7Validator, validators={'pattern': _pattern},
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        'integer', _whole))


def json_response(status, body, location=None):
    resp = webob.Response(status=status, content_type='application/json',
                          charset='utf-8')
    resp.body = jsonutils.dump_as_bytes(body)
    if location:
        resp.location = location
    return resp


def no_content():
    return webob.Response(status=204)


def _field(error):
    """The body field a jsonschema error is about, as a/b/0/c."""
    path = list(error.absolute_path)
    if error.validator == 'required':
        # "'servers' is a required property": the missing one.
        missing = error.message.split("'")[1] if "'" in error.message else ''
        path.append(missing)
    elif error.validator == 'additionalProperties':
        extra = sorted(set(error.instance) - set(error.schema.get(
            'properties', {})))
        path.append(','.join(extra))
    return '/'.join(str(p) for p in path) or '(body)'


def _cut(text):
    return text if len(text) <= SHOWN else text[:SHOWN] + '...'


def quoted(value):
    """A wrong value as a message shows it: its repr, cut."""
    return _cut(repr(value))


def _message(error):
    """jsonschema's message, a long wrong value cut short.

    A count of fields says which fields.
    """
    fields = ', '.join(sorted(error.schema.get('properties', ())))
    if error.validator == 'minProperties' and fields:
        return 'give at least %d of %s' % (error.validator_value, fields)
    if error.validator == 'maxProperties' and fields:
        return 'give at most %d of %s' % (error.validator_value, fields)
    text = repr(error.instance)
    if len(text) > SHOWN:
        return error.message.replace(text, quoted(error.instance))
    return error.message


def _json_number(kind):
    def parse(text):
        if len(text) > MAX_DIGITS:
            raise ValueError('the number %s... has more than %d digits'
                             % (text[:20], MAX_DIGITS))
        value = kind(text)
        if kind is float and not math.isfinite(value):
            raise ValueError('%s is out of the range of a number' % text)
        return value
    return parse


def _no_constant(name):
    raise ValueError('%s is not a JSON value (RFC 8259)' % name)


def _document_problem(data):
    """(field, reason) for what JSON lets through but we cannot keep.

    Nesting deeper than MAX_DEPTH, text that is not Unicode (a lone
    surrogate: ``"\\ud800"``), integers out of 64 bits.
    """
    stack = [((), data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                return path[:1], 'nested deeper than %d levels' % MAX_DEPTH
            items = value.items() if isinstance(value, dict) else \
                enumerate(value)
            for k, v in items:
                if isinstance(k, str) and not _is_text(k):
                    return path, 'the key %s is not Unicode text' % quoted(k)
                stack.append((path + (k,), v, depth + 1))
        elif isinstance(value, str) and not _is_text(value):
            return path, '%s is not Unicode text (a lone surrogate)' % (
                quoted(value))
        elif isinstance(value, int) and not isinstance(value, bool) and \
                not INT_RANGE[0] <= value <= INT_RANGE[1]:
            return path, '%s is out of range (a 64-bit integer)' % quoted(
                value)
    return None


def _is_text(text):
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return False
    return True


def extract_json(req, schema):
    """The request body as JSON, checked against ``schema``.

    A 400 names every field that is wrong and what is expected of it.
    """
    if (req.content_type or '').lower() != 'application/json':
        raise errors.HTTPError(
            415, 'the body must be application/json, not %r'
            % (req.content_type or 'none'))
    try:
        data = json.loads(req.body or b'null',
                          parse_int=_json_number(int),
                          parse_float=_json_number(float),
                          parse_constant=_no_constant)
    except RecursionError:
        raise errors.HTTPError(400, 'the body is not valid JSON: nested '
                               'deeper than %d levels' % MAX_DEPTH)
    except ValueError as e:
        raise errors.HTTPError(400, 'the body is not valid JSON: %s' % e)
    problem = _document_problem(data)
    if problem:
        raise errors.HTTPError(400, 'invalid body field %s: %s' % (
            '/'.join(map(str, problem[0])) or '(body)', problem[1]),
            code='fedex.invalid_body')
    validator = Validator(schema, format_checker=FORMATS)
    problems = sorted(validator.iter_errors(data),
                      key=lambda e: list(e.absolute_path))
    if problems:
        raise errors.HTTPError(
            400, ['invalid body field %s: %s' % (_field(e), _message(e))
                  for e in problems], code='fedex.invalid_body')
    return data


def authorize_visible(ctx, see_rule, rule, target, kind, ident):
    """Authorize ``rule`` on a resource that belongs to a project.

    A caller of another project whom ``see_rule`` does not let see it
    gets the 404 of an unknown ``kind`` ``ident``, as Nova and Cinder
    answer for another project's server or volume: a 403 would tell that
    it exists. In its own project (a reader's write, a token without
    roles) the refusal is the policy's 403.
    """
    if target.get('project_id') != ctx.project_id:
        if not policy.authorize(ctx, see_rule, target, fatal=False):
            raise exception.NotFound(kind=kind, id=ident)
        if rule == see_rule:
            # Allowed just now; a second check (half a show's policy
            # time) would answer the same.
            return
    policy.authorize(ctx, rule, target)


KINDS = {int: 'an integer', bool: 'true or false', str: 'text'}


def query(req, name, choices=None, kind=str, default=None):
    """One query parameter, converted; 400 naming it when it is wrong."""
    values = req.GET.getall(name)
    if not values:
        return default
    if len(values) > 1:
        raise errors.HTTPError(400, 'query parameter %s given %d times'
                               % (name, len(values)))
    value = values[0]
    try:
        if kind is bool:
            if value.lower() not in ('true', 'false', '1', '0', 'yes', 'no'):
                raise ValueError(value)
            value = value.lower() in ('true', '1', 'yes')
        else:
            value = kind(value)
    except ValueError:
        raise errors.HTTPError(400, 'query parameter %s: %s is not %s'
                               % (name, quoted(values[0]), KINDS[kind]))
    if choices is not None and value not in choices:
        raise errors.HTTPError(400, 'query parameter %s: %s is not one of %s'
                               % (name, quoted(value),
                                  ', '.join(map(str, choices))))
    return value


def check_query(req, allowed):
    unknown = sorted(set(req.GET.keys()) - set(allowed))
    if unknown:
        raise errors.HTTPError(400, 'unknown query parameter(s) %s; known: %s'
                               % (', '.join(map(_cut, unknown)),
                                  ', '.join(sorted(allowed))))


PAGE_PARAMS = ('limit', 'marker', 'sort_key', 'sort_dir')


def page(req, sort_keys, default_key='created_at', default_dir='desc'):
    """limit, marker, sort_key, sort_dir of a list request."""
    limit = query(req, 'limit', kind=int, default=CONF.api.default_limit)
    if limit < 1:
        raise errors.HTTPError(400, 'query parameter limit: must be >= 1')
    limit = min(limit, CONF.api.max_limit)
    return {'limit': limit,
            'marker': query(req, 'marker'),
            'sort_key': query(req, 'sort_key', choices=sort_keys,
                              default=default_key),
            'sort_dir': query(req, 'sort_dir', choices=SORT_DIRS,
                              default=default_dir)}


def list_response(req, name, items, paging, marker_key='id'):
    """``{name: items, "links": [next]}``; next only when the page is full."""
    body = {name: items}
    if paging and len(items) >= paging['limit'] and items:
        params = dict(req.GET.items())
        params['marker'] = str(items[-1][marker_key])
        params['limit'] = str(paging['limit'])
        body['links'] = [{'rel': 'next', 'href': '%s?%s' % (
            req.path_url, urllib.parse.urlencode(sorted(params.items())))}]
    return json_response(200, body)
