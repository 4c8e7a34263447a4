# tests/discover.mk: read by GNU make, not by automake (Makefile.am includes it
# through $(abs_top_srcdir), a path automake does not follow, because its
# -Wportability check rejects GNU make functions). Adds every integration and
# browser test script of the source tree to TESTS when make runs: a new
# tests/integration/test_*.sh or tests/browser/test_*.mjs is run without
# editing a list or re-running autoreconf or configure.
oob_find_tests = $(patsubst $(srcdir)/%,%,$(sort $(wildcard $(srcdir)/$(1))))
TESTS += $(call oob_find_tests,tests/integration/test_*.sh) \
	$(call oob_find_tests,tests/browser/test_*.mjs)
