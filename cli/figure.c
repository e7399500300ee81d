/*
 * figure.c: writing a figure, for `servesim plot` and `lesson --plot`.  The
 * file's name says its format (.png: a PNG through cairo at twice the CSS
 * pixels, for slides; .svg: SVG; "-": SVG on stdout), and any other name is
 * refused before anything is written: SVG bytes in x.jpg would open as a
 * broken image.  The file appears whole or not at all: the figure is written
 * beside it and renamed over it, so an existing file survives a failed write.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* A PNG's pixels per CSS pixel: a 900-pixel-wide figure becomes 1800, sharp
 * on a projector and in a slide at full width. */
#define PNG_SCALE 2

/* Whether path names a file FILE.ext, any case (.PNG from a camera-roll
 * habit is still a PNG). */
static bool has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcasecmp(path + n - e, ext);
}

/* The SVG to tmp; messages name path, the file the user asked for. */
static int write_svg(const an_plot *fig, an_plot_size size, const char *tmp, const char *path,
                     util_diag *d)
{
    FILE *f = fopen(tmp, "w");
    if (!f) return util_diag_fail(d, "cannot write %s: %s", path, strerror(errno));
    an_plot_svg(fig, size, f);
    /* | rather than ||: the file is closed whether or not a write failed */
    return (ferror(f) | fclose(f)) ? util_diag_fail(d, "cannot write %s: %s", path, strerror(errno))
                                   : UTIL_OK;
}

int cli_write_figure(const an_plot *fig, an_plot_size size, const char *path, util_diag *d)
{
    if (path[0] == '-' && path[1] == '\0') {
        an_plot_svg(fig, size, stdout);
        return fflush(stdout) ? util_diag_fail(d, "cannot write the figure") : UTIL_OK;
    }
    bool png = has_ext(path, ".png");
    if (!png && !has_ext(path, ".svg")) {
        util_clip_buf b;
        return util_diag_add(d, "cannot write a figure to %s: name it FILE.svg or FILE.png (or - "
                                "for SVG on stdout)", util_clip_path(path, &b));
    }
    char *tmp = util_xasprintf("%s.tmp-%ld", path, (long)getpid());
    int rc = png ? an_plot_png(fig, size, PNG_SCALE, tmp, d) : write_svg(fig, size, tmp, path, d);
    if (!rc && rename(tmp, path) != 0)
        rc = util_diag_fail(d, "cannot write %s: %s", path, strerror(errno));
    if (rc) remove(tmp);
    free(tmp);
    return rc;
}
