#!/usr/bin/env python3
"""Draw the manager's state machines: doc/source/images/<kind>-states.svg.

Run by ``tox -e genstates`` (needs Debian's graphviz and PyPI's pydot).
Stable states are bold, failure states red, final states double circles.
"""

import os
import sys

from automaton.converters import pydot as automaton_pydot

from fedex_manager import states

OUT = os.path.join(os.path.dirname(__file__), '..', 'doc', 'source',
                   'images')
RED = ('FAILED', 'ABORTED', 'ABORTING', 'LOST', 'DAMAGED', 'TAMPERED',
       'MISSING', 'ROLLED_BACK')


def draw(machine, out_dir):
    def node_attrs(state):
        attrs = {'fontname': 'Helvetica', 'fontsize': '10'}
        if state in machine.stable:
            attrs['style'] = 'bold'
        if state in RED:
            attrs['color'] = 'red'
            attrs['fontcolor'] = 'red'
        if state in machine.final:
            attrs['shape'] = 'doublecircle'
        return attrs

    def edge_attrs(start, event, end):
        attrs = {'fontsize': '8', 'fontname': 'Helvetica'}
        if event in ('fail', 'abort') or event.startswith('retry_'):
            attrs['color'] = 'gray'
            attrs['fontcolor'] = 'gray'
        return attrs

    graph = automaton_pydot.convert(machine.fsm, machine.kind,
                                    node_attrs_cb=node_attrs,
                                    edge_attrs_cb=edge_attrs,
                                    add_start_state=True)
    graph.set_rankdir('TB')
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, '%s-states.svg' % machine.kind)
    graph.write_svg(path)
    return path


def main(argv=None):
    out = (argv or sys.argv[1:] or [OUT])[0]
    for machine in states.MACHINES.values():
        print(draw(machine, out))


if __name__ == '__main__':
    main()
