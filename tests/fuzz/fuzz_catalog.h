/*
 * fuzz_catalog.h: the built-in catalog, loaded once for the harnesses that
 * load scenarios (fuzz_scenario, fuzz_hfconfig) and freed at exit.  A
 * header of its own because fuzz.c is linked into harnesses (traces) that
 * have no models library.
 */
#ifndef FUZZ_CATALOG_H
#define FUZZ_CATALOG_H

#include "fuzz.h"
#include "mdl.h"

static mdl_catalog *fuzz_catalog_;

static void fuzz_catalog_drop(void)
{
    mdl_catalog_destroy(fuzz_catalog_);
}

/* The catalog; a catalog that does not load aborts the harness, naming who. */
static mdl_catalog *fuzz_catalog(const char *who)
{
    if (fuzz_catalog_) return fuzz_catalog_;
    util_diag d;
    util_diag_init(&d);
    if (mdl_catalog_load_default(&fuzz_catalog_, &d)) {
        util_diag_print(&d, stderr, who);
        abort();
    }
    util_diag_fini(&d);
    atexit(fuzz_catalog_drop);
    return fuzz_catalog_;
}

#endif /* FUZZ_CATALOG_H */
