/*
 * ls_int.h: the lessons' run functions, for the registry (lessons.c).
 */
#ifndef LS_INT_H
#define LS_INT_H

#include "ls.h"

int ls__two_clocks(ls_context *c, ls_result *r, util_diag *d);      /* clocks.c */
int ls__chat_vs_summary(ls_context *c, ls_result *r, util_diag *d); /* clocks.c */
int ls__batching(ls_context *c, ls_result *r, util_diag *d);        /* load.c */
int ls__speculation(ls_context *c, ls_result *r, util_diag *d);     /* load.c */
int ls__utilisation(ls_context *c, ls_result *r, util_diag *d);     /* load.c */
int ls__tail(ls_context *c, ls_result *r, util_diag *d);            /* tails.c */
int ls__priorities(ls_context *c, ls_result *r, util_diag *d);      /* priorities.c */
int ls__memory(ls_context *c, ls_result *r, util_diag *d);          /* memory.c */
int ls__day(ls_context *c, ls_result *r, util_diag *d);             /* day.c */
int ls__fan_out(ls_context *c, ls_result *r, util_diag *d);         /* tails.c */
int ls__definitions(ls_context *c, ls_result *r, util_diag *d);     /* tails.c */

#endif /* LS_INT_H */
