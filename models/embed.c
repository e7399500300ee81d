/*
 * embed.c: a build-time tool that turns a data file into a C array, so that
 * the catalog is part of the program (C17 has no #embed).
 * Usage: embed INPUT OUTPUT.c SYMBOL
 */
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: embed INPUT OUTPUT.c SYMBOL\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "rb");
    FILE *out = fopen(argv[2], "w");
    if (!in || !out) {
        perror("embed");
        return 1;
    }
    fprintf(out, "/* Generated from %s by models/embed.c; do not edit. */\n", argv[1]);
    fprintf(out, "const char %s[] = {\n", argv[3]);
    int c, col = 0;
    while ((c = fgetc(in)) != EOF) {
        /* a byte past 127 (UTF-8) as a cast: char may be signed or not */
        fprintf(out, c > 127 ? "(char)%d," : "%d,", c);
        if (++col % 24 == 0) fputc('\n', out);
    }
    fprintf(out, "0};\n");
    fclose(in);
    return fclose(out) ? 1 : 0;
}
