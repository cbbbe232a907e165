"""Runs named raw-HTTP cases against a server, checking after each that it still answers
/health; shared by malformed_http.py and http_smuggling.py."""


class CaseFailure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise CaseFailure(message)


def run_cases(server, cases):
    """cases: [(name, fn(server) -> optional note)]. Prints PASS/FAIL per case and a summary
    line; returns the number of failures."""
    failures = 0
    for name, fn in cases:
        try:
            note = fn(server)
            r = server.get("/health", timeout=30)
            check(r is not None and r.status == 200, "server stopped serving: /health -> %r" % r)
            print("PASS %s%s" % (name, " (%s)" % note if note else ""))
        except CaseFailure as e:
            failures += 1
            print("FAIL %s: %s" % (name, e))
        except (OSError, ValueError, KeyError) as e:
            failures += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
    print("%d cases, %d failed" % (len(cases), failures))
    return failures
