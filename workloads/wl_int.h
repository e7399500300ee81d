/*
 * wl_int.h: what workloads/ files share among themselves and with their
 * tests, beyond the public wl.h.  Nothing here is part of the library's
 * interface; names carry the wl__ prefix.
 */
#ifndef WL_INT_H
#define WL_INT_H

#include "wl.h"

/* Distinct values in an empirical table: its memory is proportional to this,
 * not to the trace's rows (tests check the streaming promise with it). */
int64_t wl__empirical_distinct(const wl_empirical *e);

#endif /* WL_INT_H */
