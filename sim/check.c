/*
 * check.c: the one failure path of the invariant checks (sim_int.h), and
 * their count.  A broken invariant is a bug, not bad input: like assert, it
 * names itself on stderr -- the only place the library prints -- and aborts.
 * The checks themselves sit beside what they check (heap.c, replica.c) and
 * are compiled only with SIM_CHECKS (meson -Dinvariants=true).
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>

long long sim__checks_run;

_Noreturn void sim__check_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: servesim invariant broken: %s\n", file, line, what);
    fflush(stderr);
    abort();
}
