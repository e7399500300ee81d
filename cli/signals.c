/*
 * signals.c: SIGINT, SIGTERM and SIGHUP all ask a command to stop cleanly
 * -- the engine or the sweep stops at its next step, what was recorded is
 * kept, workers are stopped and scratch files removed -- and the command
 * exits 128 + the signal's number.  A second signal of the same kind kills
 * at once, as users expect of a second Ctrl-C.
 */
#include "cli.h"

#include <signal.h>

static volatile sig_atomic_t stop_signal;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { N_STOP = sizeof stop_signals / sizeof stop_signals[0] };
static struct sigaction saved[N_STOP];

static void on_stop(int sig)
{
    stop_signal = sig;
}

const volatile sig_atomic_t *cli_stop_flag(void)
{
    return &stop_signal;
}

void cli_catch_stop_signals(void)
{
    struct sigaction sa = {.sa_handler = on_stop, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_STOP; i++) sigaction(stop_signals[i], &sa, &saved[i]);
}

void cli_release_stop_signals(void)
{
    for (int i = 0; i < N_STOP; i++) sigaction(stop_signals[i], &saved[i], NULL);
}

int cli_stop_exit_code(void)
{
    return stop_signal ? 128 + stop_signal : CLI_EXIT_INTERRUPTED;
}
