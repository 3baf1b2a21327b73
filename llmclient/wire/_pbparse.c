/* Protobuf wire bytes -> dicts, in C: the compiled twin of `_parse` (llmclient/wire/pbschema.py)
 * and `_parse_body` (llmclient/wire/protobuf.py).
 *
 * Why it exists: the pure-Python table-driven parser takes several times orjson's time on the
 * same answer's JSON, and protobuf decode must be no slower than orjson (figures in README,
 * What it measured). This file walks the same tables (`_Spec.tags`: wire tag -> (JSON key,
 * kind, aux)) and builds the same dicts, raising the same errors with the same messages, so
 * the Python parser stays the reference and the fallback when no C compiler was at hand at
 * install time.
 * tests/proto/test_pbparse_parity.py feeds both parsers valid, mutated and random bytes and
 * requires identical results or identical errors.
 *
 * Everything that is not the hot path (null/empty marks, the `extra` JSON field, the `json`
 * body) is handed back to Python callables given to `setup()`.
 *
 * Bounds: every read checks against the whole buffer's length (an IndexError, "truncated", as
 * Python's data[i] would raise), every length against its message's end (`_Bad`), nesting goes
 * through Py_EnterRecursiveCall (RecursionError, as in Python).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Decoder kinds: the _K_* constants of pbschema.py (checked by setup()). */
enum {
    K_STR, K_RSTR, K_MSG, K_RMSG, K_BYTES, K_INT64, K_UINT32, K_BOOL, K_DOUBLE,
    K_RINT_PACKED, K_RINT, K_MARKS_PACKED, K_MARKS, K_EXTRA, K_COUNT
};
enum { W_VARINT = 0, W_I64 = 1, W_LEN = 2, W_I32 = 5 };
enum { NULLS = 15, EMPTY = 101 };  /* the field numbers of the marks (_NULLS, _EMPTY) */

static PyObject *Bad;         /* protobuf._Bad */
static PyObject *finish;      /* finish(spec, out, marks or None, extra or None) -> None */
static PyObject *body_json;   /* body_json(bytes) -> dict (raises MalformedResponseError) */
static PyObject *body_kinds;  /* {field number: (kind name, _Spec)} for Body's message fields */
static PyObject *token_spec;  /* the TokenDelta _Spec */
static PyObject *s_tags, *s_low, *s_name, *s_mark_keys, *s_content, *s_empty, *s_token, *s_done,
    *s_json;

#define BODY_DONE 10
#define BODY_JSON 11
#define BODY_DROPPED 12
#define BODY_TOKEN 13

static int
truncated(void)
{
    PyErr_SetString(PyExc_IndexError, "index out of range");
    return -1;
}

static int
bad_spec(const char *fmt, PyObject *spec)
{
    PyObject *name = PyObject_GetAttr(spec, s_name);
    if (name == NULL)
        return -1;
    PyObject *msg = PyUnicode_FromFormat(fmt, name);
    Py_DECREF(name);
    if (msg != NULL) {
        PyErr_SetObject(Bad, msg);
        Py_DECREF(msg);
    }
    return -1;
}

/* A base-128 varint at d[*i] (as _varint_tail: over 10 bytes is an error, bits past 64 are
 * dropped). */
static inline int
varint(const unsigned char *d, Py_ssize_t len, Py_ssize_t *i, uint64_t *out)
{
    if (*i >= len)
        return truncated();
    unsigned int b = d[(*i)++];
    if (b < 0x80) {
        *out = b;
        return 0;
    }
    uint64_t v = b & 0x7F;
    int shift = 7;
    for (;;) {
        if (*i >= len)
            return truncated();
        b = d[(*i)++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = v;
            return 0;
        }
        shift += 7;
        if (shift >= 70) {
            PyErr_SetString(Bad, "a varint longer than 10 bytes");
            return -1;
        }
    }
}

static inline PyObject *
signed64(uint64_t v)
{
    return PyLong_FromLongLong((long long)(int64_t)v);
}

/* out[key] as a list (a new one stored there if it is not a list); borrowed. */
static PyObject *
list_at(PyObject *out, PyObject *key)
{
    PyObject *lst = PyDict_GetItemWithError(out, key);
    if (lst != NULL && PyList_CheckExact(lst))
        return lst;
    if (PyErr_Occurred())
        return NULL;
    lst = PyList_New(0);
    if (lst == NULL)
        return NULL;
    int rc = PyDict_SetItem(out, key, lst);
    Py_DECREF(lst);
    return rc < 0 ? NULL : lst;
}

static int
set_new(PyObject *out, PyObject *key, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyDict_SetItem(out, key, value);
    Py_DECREF(value);
    return rc;
}

static int
append_new(PyObject *lst, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyList_Append(lst, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *parse_message(PyObject *spec, PyObject *data, Py_ssize_t i, Py_ssize_t end);

/* A message's null/empty marks, applied after its fields (as protobuf._finish does). */
typedef struct {
    uint64_t number;
    int is_null;  /* `nulls` (15) or `empty` (101) */
} Mark;

typedef struct {
    Mark *items;
    Py_ssize_t n, cap;
    Mark small[8];
} Marks;

static int
add_mark(Marks *m, PyObject *which, uint64_t number)
{
    long w = PyLong_AsLong(which);
    if (w == -1 && PyErr_Occurred())
        return -1;
    if (m->n == m->cap) {
        Py_ssize_t cap = m->cap * 2;
        Mark *items = m->items == m->small ? PyMem_Malloc(cap * sizeof(Mark))
                                           : PyMem_Realloc(m->items, cap * sizeof(Mark));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (m->items == m->small)
            memcpy(items, m->small, sizeof(m->small));
        m->items = items;
        m->cap = cap;
    }
    m->items[m->n].number = number;
    m->items[m->n].is_null = w == NULLS;
    m->n++;
    return 0;
}

/* out[key of each marked field] = None or []; an unknown number is Python's error to raise. */
static int
apply_marks(PyObject *spec, PyObject *out, Marks *m)
{
    PyObject *keys = PyObject_GetAttr(spec, s_mark_keys);
    if (keys == NULL)
        return -1;
    int rc = 0;
    for (Py_ssize_t k = 0; k < m->n && rc == 0; k++) {
        PyObject *num = PyLong_FromUnsignedLongLong(m->items[k].number);
        if (num == NULL) {
            rc = -1;
            break;
        }
        PyObject *key = PyDict_GetItemWithError(keys, num);
        if (key == NULL) {
            if (!PyErr_Occurred()) {  /* _key_of raises the MalformedResponseError */
                PyObject *one = Py_BuildValue("[(iO)]", m->items[k].is_null ? NULLS : EMPTY, num);
                PyObject *r = one ? PyObject_CallFunctionObjArgs(finish, spec, out, one, Py_None,
                                                                 NULL) : NULL;
                Py_XDECREF(one);
                Py_XDECREF(r);
                if (r != NULL)
                    PyErr_SetString(PyExc_SystemError, "llmclient.wire._pbparse: a mark with no key");
            }
            rc = -1;
        }
        else if (m->items[k].is_null)
            rc = PyDict_SetItem(out, key, Py_None);
        else
            rc = set_new(out, key, PyList_New(0));
        Py_DECREF(num);
    }
    Py_DECREF(keys);
    return rc;
}

/* One length-delimited field of a known entry: d[i:j]. */
static int
len_field(PyObject *spec, PyObject *data, PyObject *out, PyObject *key, long kind,
          PyObject *aux, Py_ssize_t i, Py_ssize_t j, Marks *marks, PyObject **extra)
{
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    switch (kind) {
    case K_STR:
        return set_new(out, key, PyUnicode_DecodeUTF8((const char *)d + i, j - i, NULL));
    case K_MSG:
        return set_new(out, key, parse_message(aux, data, i, j));
    case K_RMSG:
    case K_RSTR: {
        PyObject *item = kind == K_RMSG ? parse_message(aux, data, i, j)
                                        : PyUnicode_DecodeUTF8((const char *)d + i, j - i, NULL);
        if (item == NULL)
            return -1;
        PyObject *lst = PyDict_GetItemWithError(out, key);
        if (lst != NULL && PyList_CheckExact(lst))
            return append_new(lst, item);
        if (PyErr_Occurred()) {
            Py_DECREF(item);
            return -1;
        }
        PyObject *one = PyList_New(1);
        if (one == NULL) {
            Py_DECREF(item);
            return -1;
        }
        PyList_SET_ITEM(one, 0, item);
        return set_new(out, key, one);
    }
    case K_BYTES: {
        if (j <= i)  /* proto3: an empty bytes field is an absent one */
            return 0;
        PyObject *raw = PyBytes_FromStringAndSize((const char *)d + i, j - i);
        if (raw == NULL)
            return -1;
        PyObject *value = PyObject_CallOneArg(aux, raw);
        Py_DECREF(raw);
        return set_new(out, key, value);
    }
    case K_EXTRA: {
        PyObject *raw = PyBytes_FromStringAndSize((const char *)d + i, j - i);
        if (raw == NULL)
            return -1;
        Py_XSETREF(*extra, raw);
        return 0;
    }
    case K_MARKS_PACKED:
    case K_RINT_PACKED: {
        PyObject *lst = NULL;
        if (kind == K_RINT_PACKED && (lst = list_at(out, key)) == NULL)
            return -1;
        while (i < j) {
            uint64_t v;
            if (varint(d, len, &i, &v) < 0)
                return -1;
            if (kind == K_MARKS_PACKED ? add_mark(marks, aux, v) : append_new(lst, signed64(v)))
                return -1;
        }
        if (i != j)
            return bad_spec("a packed field of %U overruns its length", spec);
        return 0;
    }
    default:
        PyErr_Format(PyExc_SystemError, "llmclient.wire._pbparse: kind %ld on a LEN tag", kind);
        return -1;
    }
}

static int
varint_field(PyObject *out, PyObject *key, long kind, PyObject *aux, uint64_t v,
             Marks *marks)
{
    switch (kind) {
    case K_INT64:
        return set_new(out, key, signed64(v));
    case K_BOOL:
        return PyDict_SetItem(out, key, v != 0 ? Py_True : Py_False);
    case K_UINT32:
        return set_new(out, key, PyLong_FromUnsignedLong((unsigned long)(v & 0xFFFFFFFFu)));
    case K_MARKS:
        return add_mark(marks, aux, v & 0xFFFFFFFFu);
    default: {  /* K_RINT */
        PyObject *lst = list_at(out, key);
        return lst == NULL ? -1 : append_new(lst, signed64(v));
    }
    }
}

static double
read_double(const unsigned char *p)
{
    unsigned char b[8];
#if PY_BIG_ENDIAN
    for (int k = 0; k < 8; k++)
        b[k] = p[7 - k];
#else
    memcpy(b, p, 8);
#endif
    double x;
    memcpy(&x, b, 8);
    return x;
}

/* The tag's entry (borrowed): from spec.low (a list indexed by tag: None or the entry) for
 * small tags, else from spec.tags; NULL with no error for an unknown field. */
static inline PyObject *
entry(PyObject *low, PyObject *tags, uint64_t tag)
{
    PyObject *ent;
    if (tag < (uint64_t)PyList_GET_SIZE(low)) {
        ent = PyList_GET_ITEM(low, (Py_ssize_t)tag);
        if (ent == Py_None)
            return NULL;
    }
    else {
        PyObject *k = PyLong_FromUnsignedLongLong(tag);
        if (k == NULL)
            return NULL;
        ent = PyDict_GetItemWithError(tags, k);
        Py_DECREF(k);
    }
    if (ent != NULL && !(PyTuple_CheckExact(ent) && PyTuple_GET_SIZE(ent) == 3)) {
        PyErr_SetString(PyExc_SystemError, "llmclient.wire._pbparse: a tag entry is not a 3-tuple");
        return NULL;
    }
    return ent;
}

static int
parse_fields(PyObject *spec, PyObject *low, PyObject *tags, PyObject *data, Py_ssize_t i, Py_ssize_t end,
             PyObject *out, Marks *marks, PyObject **extra)
{
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    while (i < end) {
        uint64_t tag;
        if (varint(d, len, &i, &tag) < 0)
            return -1;
        PyObject *ent = entry(low, tags, tag);
        if (ent == NULL && PyErr_Occurred())
            return -1;
        PyObject *key = NULL, *aux = NULL;
        long kind = -1;
        if (ent != NULL) {
            key = PyTuple_GET_ITEM(ent, 0);
            aux = PyTuple_GET_ITEM(ent, 2);
            kind = PyLong_AsLong(PyTuple_GET_ITEM(ent, 1));
            if (kind == -1 && PyErr_Occurred())
                return -1;
        }
        unsigned int wire = (unsigned int)(tag & 7);
        if (wire == W_LEN) {
            uint64_t n;
            if (varint(d, len, &i, &n) < 0)
                return -1;
            if (i > end || n > (uint64_t)(end - i))  /* i > end: the length ran past it */
                return bad_spec("a field of %U runs past the end of its message", spec);
            Py_ssize_t j = i + (Py_ssize_t)n;
            if (ent != NULL && len_field(spec, data, out, key, kind, aux, i, j, marks, extra) < 0)
                return -1;
            i = j;
        }
        else if (wire == W_VARINT) {
            uint64_t v;
            if (varint(d, len, &i, &v) < 0)
                return -1;
            if (ent != NULL && varint_field(out, key, kind, aux, v, marks) < 0)
                return -1;
        }
        else if (wire == W_I64) {
            if (ent != NULL) {
                if (i + 8 > len)
                    return truncated();
                if (set_new(out, key, PyFloat_FromDouble(read_double(d + i))) < 0)
                    return -1;
            }
            i += 8;
        }
        else if (wire == W_I32) {  /* no such field in the schema: skipped like any unknown */
            i += 4;
        }
        else {
            PyObject *name = PyObject_GetAttr(spec, s_name);
            if (name != NULL) {
                PyErr_Format(Bad, "wire type %u (groups are not used) in %U", wire, name);
                Py_DECREF(name);
            }
            return -1;
        }
    }
    if (i != end)
        return bad_spec("%U ends inside a field", spec);
    return 0;
}

/* The specs given to setup() and their tables (strong references: the specs live as long as
 * the process), so that a message's tables cost a pointer scan, not two attribute lookups. */
#define MAX_SPECS 64
static PyObject *spec_ptr[MAX_SPECS], *spec_low[MAX_SPECS], *spec_tags[MAX_SPECS];
static Py_ssize_t n_specs;

/* spec.low and spec.tags as new references. */
static int
tables(PyObject *spec, PyObject **low, PyObject **tags)
{
    for (Py_ssize_t k = 0; k < n_specs; k++) {
        if (spec_ptr[k] == spec) {
            *low = Py_NewRef(spec_low[k]);
            *tags = Py_NewRef(spec_tags[k]);
            return 0;
        }
    }
    if ((*tags = PyObject_GetAttr(spec, s_tags)) == NULL
        || (*low = PyObject_GetAttr(spec, s_low)) == NULL)
        return -1;
    if (!PyDict_CheckExact(*tags) || !PyList_CheckExact(*low)) {
        PyErr_SetString(PyExc_TypeError, "llmclient.wire._pbparse: spec.tags/low are not a dict/list");
        return -1;
    }
    return 0;
}

static int
remember_specs(PyObject *specs)
{
    for (Py_ssize_t k = 0; k < n_specs; k++) {
        Py_CLEAR(spec_ptr[k]);
        Py_CLEAR(spec_low[k]);
        Py_CLEAR(spec_tags[k]);
    }
    n_specs = 0;
    Py_ssize_t n = PyList_GET_SIZE(specs);
    for (Py_ssize_t k = 0; k < n && k < MAX_SPECS; k++) {
        PyObject *spec = PyList_GET_ITEM(specs, k), *low = NULL, *tags = NULL;
        if (tables(spec, &low, &tags) < 0) {
            Py_XDECREF(low);
            Py_XDECREF(tags);
            return -1;
        }
        spec_ptr[n_specs] = Py_NewRef(spec);
        spec_low[n_specs] = low;
        spec_tags[n_specs] = tags;
        n_specs++;
    }
    return 0;
}

/* One `spec` message in data[i:end] -> a new dict (the twin of protobuf._parse). */
static PyObject *
parse_message(PyObject *spec, PyObject *data, Py_ssize_t i, Py_ssize_t end)
{
    if (Py_EnterRecursiveCall(" while parsing a protobuf message"))
        return NULL;
    PyObject *out = NULL, *extra = NULL;
    Marks marks;
    marks.items = marks.small;
    marks.n = 0;
    marks.cap = (Py_ssize_t)(sizeof(marks.small) / sizeof(marks.small[0]));
    PyObject *low = NULL, *tags = NULL;
    if (tables(spec, &low, &tags) < 0)
        goto done;
    out = PyDict_New();
    if (out == NULL)
        goto done;
    if (parse_fields(spec, low, tags, data, i, end, out, &marks, &extra) < 0) {
        Py_CLEAR(out);
        goto done;
    }
    if (marks.n && apply_marks(spec, out, &marks) < 0) {
        Py_CLEAR(out);
        goto done;
    }
    if (extra != NULL) {
        PyObject *r = PyObject_CallFunctionObjArgs(finish, spec, out, Py_None, extra, NULL);
        if (r == NULL)
            Py_CLEAR(out);
        Py_XDECREF(r);
    }
done:
    if (marks.items != marks.small)
        PyMem_Free(marks.items);
    Py_XDECREF(tags);
    Py_XDECREF(extra);
    Py_LeaveRecursiveCall();
    return out;
}

static int
check_ready(void)
{
    if (Bad == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "llmclient.wire._pbparse.setup() was not called");
        return -1;
    }
    return 0;
}

static int
get_range(PyObject *data, Py_ssize_t *i, Py_ssize_t *end)
{
    if (!PyBytes_CheckExact(data)) {
        PyErr_Format(PyExc_TypeError, "expected bytes, got %.100s", Py_TYPE(data)->tp_name);
        return -1;
    }
    if (*i < 0 || *end < *i || *end > PyBytes_GET_SIZE(data)) {
        PyErr_SetString(PyExc_ValueError, "a range outside the buffer");
        return -1;
    }
    return 0;
}

static PyObject *
py_parse(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "parse(spec, data, start, end)");
        return NULL;
    }
    Py_ssize_t i = PyLong_AsSsize_t(args[2]), end = PyLong_AsSsize_t(args[3]);
    if ((i == -1 || end == -1) && PyErr_Occurred())
        return NULL;
    if (check_ready() < 0 || get_range(args[1], &i, &end) < 0)
        return NULL;
    return parse_message(args[0], args[1], i, end);
}

/* Body bytes -> (kind or None, dict or None, dropped): the twin of protobuf._parse_body. */
static PyObject *
py_parse_body(PyObject *self, PyObject *data)
{
    (void)self;
    Py_ssize_t i = 0, end = 0;
    if (check_ready() < 0)
        return NULL;
    if (PyBytes_CheckExact(data))
        end = PyBytes_GET_SIZE(data);
    if (get_range(data, &i, &end) < 0)
        return NULL;
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    PyObject *kind = Py_NewRef(Py_None), *value = Py_NewRef(Py_None);
    PyObject *dropped = PyList_New(0);
    if (dropped == NULL)
        goto fail;
    while (i < end) {
        uint64_t tag;
        if (varint(d, end, &i, &tag) < 0)
            goto fail;
        unsigned int wire = (unsigned int)(tag & 7);
        if (wire != W_LEN) {  /* Body has only LEN fields: skip an unknown scalar */
            if (wire == W_VARINT) {
                uint64_t v;
                if (varint(d, end, &i, &v) < 0)
                    goto fail;
            }
            else if (wire == W_I64 || wire == W_I32)
                i += wire == W_I64 ? 8 : 4;
            else {
                PyErr_Format(Bad, "wire type %u in Body", wire);
                goto fail;
            }
            continue;
        }
        uint64_t n;
        if (varint(d, end, &i, &n) < 0)
            goto fail;
        if (i > end || n > (uint64_t)(end - i)) {
            PyErr_SetString(Bad, "a field runs past the end of the body");
            goto fail;
        }
        Py_ssize_t j = i + (Py_ssize_t)n;
        uint64_t number = tag >> 3;
        PyObject *known = NULL;
        if (number < 64) {
            PyObject *k = PyLong_FromUnsignedLongLong(number);
            if (k == NULL)
                goto fail;
            known = PyDict_GetItemWithError(body_kinds, k);
            Py_DECREF(k);
            if (known == NULL && PyErr_Occurred())
                goto fail;
        }
        if (known != NULL) {
            if (!(PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 2)) {
                PyErr_SetString(PyExc_SystemError, "llmclient.wire._pbparse: body kinds entry");
                goto fail;
            }
            PyObject *v = parse_message(PyTuple_GET_ITEM(known, 1), data, i, j);
            if (v == NULL)
                goto fail;
            Py_SETREF(value, v);
            Py_SETREF(kind, Py_NewRef(PyTuple_GET_ITEM(known, 0)));
        }
        else if (number == BODY_DROPPED) {
            if (append_new(dropped, PyUnicode_DecodeUTF8((const char *)d + i, j - i, NULL)) < 0)
                goto fail;
        }
        else if (number == BODY_TOKEN) {
            PyObject *t = parse_message(token_spec, data, i, j);
            if (t == NULL)
                goto fail;
            PyObject *content = PyDict_GetItemWithError(t, s_content);
            if (content == NULL && PyErr_Occurred()) {
                Py_DECREF(t);
                goto fail;
            }
            PyObject *v = Py_BuildValue("{OO}", s_content, content ? content : s_empty);
            Py_DECREF(t);
            if (v == NULL)
                goto fail;
            Py_SETREF(value, v);
            Py_SETREF(kind, Py_NewRef(s_token));
        }
        else if (number == BODY_DONE) {
            Py_SETREF(value, Py_NewRef(Py_None));
            Py_SETREF(kind, Py_NewRef(s_done));
        }
        else if (number == BODY_JSON) {
            PyObject *raw = PyBytes_FromStringAndSize((const char *)d + i, j - i);
            if (raw == NULL)
                goto fail;
            PyObject *v = PyObject_CallOneArg(body_json, raw);
            Py_DECREF(raw);
            if (v == NULL)
                goto fail;
            Py_SETREF(value, v);
            Py_SETREF(kind, Py_NewRef(s_json));
        }
        i = j;
    }
    PyObject *r = PyTuple_Pack(3, kind, value, dropped);
    Py_DECREF(kind);
    Py_DECREF(value);
    Py_DECREF(dropped);
    return r;
fail:
    Py_XDECREF(kind);
    Py_XDECREF(value);
    Py_XDECREF(dropped);
    return NULL;
}

static PyObject *
py_setup(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *bad, *fin, *bj, *kinds, *tok, *consts, *specs;
    if (!PyArg_ParseTuple(args, "OOOO!OO!O!:setup", &bad, &fin, &bj, &PyDict_Type, &kinds, &tok,
                          &PyTuple_Type, &consts, &PyList_Type, &specs))
        return NULL;
    /* The kinds the Python side numbers must be the ones compiled here. */
    if (PyTuple_GET_SIZE(consts) != K_COUNT) {
        PyErr_SetString(PyExc_ValueError, "llmclient.wire._pbparse: decoder kinds changed");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < K_COUNT; k++) {
        if (PyLong_AsLong(PyTuple_GET_ITEM(consts, k)) != k) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "llmclient.wire._pbparse: decoder kinds changed");
            return NULL;
        }
    }
    if (remember_specs(specs) < 0)
        return NULL;
    Py_XSETREF(Bad, Py_NewRef(bad));
    Py_XSETREF(finish, Py_NewRef(fin));
    Py_XSETREF(body_json, Py_NewRef(bj));
    Py_XSETREF(body_kinds, Py_NewRef(kinds));
    Py_XSETREF(token_spec, Py_NewRef(tok));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", py_setup, METH_VARARGS,
     "setup(bad, finish, body_json, body_kinds, token_spec, kinds, specs): the Python side's "
     "hooks and tables."},
    {"parse", (PyCFunction)(void (*)(void))py_parse, METH_FASTCALL,
     "parse(spec, data, start, end) -> dict: one message, as protobuf._parse."},
    {"parse_body", py_parse_body, METH_O,
     "parse_body(data) -> (kind or None, dict or None, dropped): as protobuf._parse_body."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "llmclient.wire._pbparse",
    "Compiled protobuf wire parser (see llmclient/wire/protobuf.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__pbparse(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_tags, "tags");
    INTERN(s_low, "low");
    INTERN(s_name, "name");
    INTERN(s_mark_keys, "mark_keys");
    INTERN(s_content, "content");
    INTERN(s_empty, "");
    INTERN(s_token, "token");
    INTERN(s_done, "done");
    INTERN(s_json, "json");
#undef INTERN
    return PyModule_Create(&module);
}
