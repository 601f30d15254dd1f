"""Request and response helpers shared by the handlers."""

import json
import urllib.parse

import jsonschema
from oslo_config import cfg
from oslo_serialization import jsonutils
import webob

from fedex_manager.api import errors
from fedex_manager import policy
from lsrp import exception

CONF = cfg.CONF
SORT_DIRS = ('asc', 'desc')


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


def extract_json(req, schema):
    """The request body as JSON, checked against ``schema``.

    A 400 names every field that is wrong and what is expected of it.
    """
    if req.content_type != 'application/json':
        raise errors.HTTPError(
            415, 'the body must be application/json, not %r'
            % (req.content_type or 'none'))
    try:
        data = json.loads(req.body or b'null')
    except ValueError as e:
        raise errors.HTTPError(400, 'the body is not valid JSON: %s' % e)
    validator = jsonschema.Draft7Validator(schema)
    problems = sorted(validator.iter_errors(data),
                      key=lambda e: list(e.absolute_path))
    if problems:
        raise errors.HTTPError(
            400, ['invalid body field %s: %s' % (_field(e), e.message)
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
    if target.get('project_id') != ctx.project_id and not policy.authorize(
            ctx, see_rule, target, fatal=False):
        raise exception.NotFound(kind=kind, id=ident)
    policy.authorize(ctx, rule, target)


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
        raise errors.HTTPError(400, 'query parameter %s: %r is not a %s'
                               % (name, values[0], kind.__name__))
    if choices is not None and value not in choices:
        raise errors.HTTPError(400, 'query parameter %s: %r is not one of %s'
                               % (name, value, ', '.join(map(str, choices))))
    return value


def check_query(req, allowed):
    unknown = sorted(set(req.GET.keys()) - set(allowed))
    if unknown:
        raise errors.HTTPError(400, 'unknown query parameter(s) %s; known: %s'
                               % (', '.join(unknown),
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
