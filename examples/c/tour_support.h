/* What the tour (tour.c) prints besides its cells' own output, and how it
 * checks itself.
 *
 * The tour's output is a notebook transcript: a cell is ">>> " and "... "
 * lines of the Python it reproduces, then exactly what that Python prints
 * under JAX. Lines starting with "# " are the tour's own notes, outside
 * every cell. With --c, every libspmd call a cell makes is shown where it
 * runs, on a line starting with "[C] ".
 *
 * Each section ends with a note saying whether its values and texts agree
 * with the answers JAX recorded for the same cells (tests/conformance/,
 * conformance/README.md). */
#ifndef SPMD_TOUR_SUPPORT_H
#define SPMD_TOUR_SUPPORT_H

#include <spmd/spmd.h>

#include <stddef.h>
#include <stdint.h>

/* 1 when the tour runs with --c. */
extern int tour_show_c;

/* "\n=== title ===": ends the previous section (its agreement note) and
 * starts counting this one's checks. tour_end() ends the last one and
 * returns the tour's exit status: 1 when any check disagreed. */
void tour_section(const char *title);
int tour_end(void);

/* A cell's header: ">>> " then "... " for each further line. */
void tour_cell(const char *python);

/* A note line, "# " and the text. */
void tour_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* With --c: "[C] " and the text. */
void tour_c(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Stops the tour with the call's text and libspmd's message unless st is
 * SPMD_OK. */
void tour_ok(spmd_status st, const char *call);

/* Runs a libspmd call, shown first with --c (as written in tour.c) and
 * checked after. */
#define CALL(...)                            \
  do {                                       \
    tour_c("%s;", #__VA_ARGS__);             \
    tour_ok((__VA_ARGS__), #__VA_ARGS__);    \
  } while (0)

/* The same for a call into the seed programs (seed_*.c), with a comment
 * saying which libspmd calls it makes. */
#define SEED(what, ...)                              \
  do {                                               \
    tour_c("%s;  /* %s */", #__VA_ARGS__, what);     \
    tour_ok((__VA_ARGS__), #__VA_ARGS__);            \
  } while (0)

/* A call that returns nothing (destroy), shown with --c. */
#define VCALL(...)                 \
  do {                             \
    tour_c("%s;", #__VA_ARGS__);   \
    __VA_ARGS__;                   \
  } while (0)

/* Printing, as the notebook's Python prints; `name` is the C variable the
 * --c line names. Each keeps what it printed for tour_agree_text. */
void show_repr(const spmd_array *a, const char *name);        /* a cell's last value */
void show_str(const spmd_array *a, const char *name);         /* print(a) */
void show_picture(const spmd_array *a, const char *name);     /* visualize_array_sharding */
void show_sharding(const spmd_sharding *s, const char *name); /* str(sharding) */
void show_device(spmd_runtime *rt, int device);               /* repr(device) */
/* Prints a line the tour formatted itself (the C line says how). */
void show_line(const char *c_code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Python's repr of a float: the shortest text that reads back as v. */
void py_float(double v, char *buf, size_t size);

/* ---- JAX's recorded answers ---- */

/* The references' directory (SPMD_TOUR_REFERENCES, else the source tree's
 * tests/conformance), and whether it holds them. */
const char *tour_references(void);
int tour_have_references(void);

/* Reads float32 values recorded as {"dtype": "float32", "hex": ...} at
 * `path` (dot-separated keys) in case `case_name` of `family`'s cases.json
 * (or of its single case): 1 on success, with exactly n values recorded.
 * tour_ref_u8 reads the first n values of a longer uint8 array too. */
int tour_ref_f32(const char *family, const char *case_name, const char *path, float *out,
                 size_t n);
int tour_ref_u8(const char *family, const char *case_name, const char *path, uint8_t *out,
                size_t n);
/* A number at `path` (NAN when absent). */
double tour_ref_number(const char *family, const char *case_name, const char *path);
/* A string at `path` (NULL when absent). */
const char *tour_ref_text(const char *family, const char *case_name, const char *path);
/* The first line of JAX's run of the tour (tour/transcript.txt) starting
 * with `prefix`, without its newline, in buf; 0 when there is none. */
int tour_transcript_line(const char *prefix, char *buf, size_t size);

/* The checks counted in the current section's agreement note. */

/* What the last show_* call printed against the text recorded at `path`. */
void tour_agree_text(const char *family, const char *case_name, const char *path);
/* float32 values against the recorded ones (hex in full, or a summary of
 * sums and samples) within `tol`. */
void tour_agree_f32(const char *family, const char *case_name, const char *path,
                    const float *have, int64_t n, double tol);
/* Same, for the values of a float32 array, or of an int32 one (exactly). */
void tour_agree_array(const char *family, const char *case_name, const char *path,
                      const spmd_array *a, double tol);
/* A check the tour made itself against a value recorded in `family`. */
void tour_agree(int agreed, const char *family, const char *what);

#endif /* SPMD_TOUR_SUPPORT_H */
