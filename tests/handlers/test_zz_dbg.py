import logging, sys
def test_x(load, capsys):
    h = load("intake")
    lg = logging.getLogger("intake")
    print("DBG", lg.handlers, lg.level, lg.getEffectiveLevel(), getattr(lg, "powertools_handler", None), lg.propagate, lg.disabled, file=sys.stderr)
    for hd in lg.handlers: print("DBG h", hd, hd.stream, hd.level, hd.filters, file=sys.stderr)
    print("DBG stdout", sys.stdout, file=sys.stderr)
