/* Compiled fast path of rocketpipe.protocol.header_json.decode_json_header (optional; the Python
 * function, orjson plus its checks, is the reference and the fallback, and the tests run both).
 *
 * decode(data, languages) -> (code, opaque, flag, remark, ext_fields, language, version) | None
 *
 * Parses the JSON header of a remoting frame as fastjson and rocketpipe write it: one object
 * whose members are "code", "opaque", "flag", "version" (integers), "language" (a name, looked
 * up in `languages`, or an integer), "remark" (a string or null; "" reads as None),
 * "extFields" (an object of string values, or null) and "serializeTypeCurrentRPC" (a string,
 * ignored), in any order, the last of a repeated member winning, with JSON whitespace and string
 * escapes (\uXXXX pairs included). An absent integer is 0 and an absent language is left to the
 * caller (None in the tuple), as the Python function reads them.
 * Returns None, having built nothing the caller sees, for anything else: malformed JSON, another
 * member, a number with a fraction or exponent or beyond 64 bits, a non-string extFields value,
 * a lone surrogate escape, bytes that are not UTF-8. The Python function then decodes the header
 * (and raises its ProtocolError for what is malformed).
 * Errors: only MemoryError and the like.
 *
 * decode_payload(buf, start, end, languages, cls, json, other) -> RemotingCommand | None: the
 * same for a whole frame payload, the command built here (see the function).
 *
 * encode_head(cmd, names, max_frame) -> bytes | None: the other way, the first part of a JSON
 * frame as encode_frame_parts writes it (see the function).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    char *scratch; /* unescaped string bytes, PyMem */
    Py_ssize_t scratch_size;
} parser;

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int hex4(const unsigned char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

static int put_utf8(char *w, unsigned cp) {
    if (cp < 0x80) {
        w[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        w[0] = (char)(0xC0 | (cp >> 6));
        w[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        w[0] = (char)(0xE0 | (cp >> 12));
        w[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        w[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    w[0] = (char)(0xF0 | (cp >> 18));
    w[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    w[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    w[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* str of UTF-8 p[0:n]: ASCII copied into a new compact str, the rest decoded strictly. */
static PyObject *text(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] & 0x80) return PyUnicode_DecodeUTF8((const char *)p, n, "strict");
    }
    if (n == 1) return PyUnicode_FromOrdinal(p[0]); /* a cached one-character str */
    PyObject *out = PyUnicode_New(n, 127);
    if (out != NULL) memcpy(PyUnicode_DATA(out), p, (size_t)n);
    return out;
}

/* The raw bytes of the JSON string at ps->p (the opening quote), moving past it: 1 read (*s, *n:
 * its text between the quotes, *escaped: holds a backslash), 0 not a string this parser takes. */
static int span(parser *ps, const unsigned char **s, Py_ssize_t *n, int *escaped) {
    if (ps->p >= ps->end || *ps->p != '"') return 0;
    const unsigned char *q = ++ps->p;
    *escaped = 0;
    while (q < ps->end && *q != '"') {
        if (*q < 0x20) return 0; /* a raw control character: not JSON */
        if (*q == '\\') {
            *escaped = 1;
            q++;
            if (q >= ps->end) return 0;
        }
        q++;
    }
    if (q >= ps->end) return 0;
    *s = ps->p;
    *n = q - ps->p;
    ps->p = q + 1;
    return 1;
}

/* A JSON string at ps->p (the opening quote). Returns a new str; NULL with no error set when it
 * is not one this parser takes (the caller falls back), NULL with an error set on MemoryError. */
static PyObject *string(parser *ps) {
    const unsigned char *s;
    Py_ssize_t n;
    int escaped;
    if (!span(ps, &s, &n, &escaped)) return NULL;
    const unsigned char *q = s + n;
    PyObject *out;
    if (!escaped) {
        out = text(s, n);
    } else {
        if (n > ps->scratch_size) { /* an escape never takes more bytes than its text */
            char *grown = PyMem_Realloc(ps->scratch, (size_t)n);
            if (grown == NULL) {
                PyErr_NoMemory();
                return NULL;
            }
            ps->scratch = grown;
            ps->scratch_size = n;
        }
        char *w = ps->scratch;
        for (const unsigned char *r = s; r < q;) {
            if (*r != '\\') {
                *w++ = (char)*r++;
                continue;
            }
            r++;
            switch (*r) {
            case '"': case '\\': case '/': *w++ = (char)*r++; break;
            case 'b': *w++ = '\b'; r++; break;
            case 'f': *w++ = '\f'; r++; break;
            case 'n': *w++ = '\n'; r++; break;
            case 'r': *w++ = '\r'; r++; break;
            case 't': *w++ = '\t'; r++; break;
            case 'u': {
                unsigned cp, lo;
                if (q - r < 5 || !hex4(r + 1, &cp)) return NULL;
                r += 5;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (q - r < 6 || r[0] != '\\' || r[1] != 'u' || !hex4(r + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return NULL; /* a lone high surrogate */
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    r += 6;
                }
                w += put_utf8(w, cp);
                break;
            }
            default: return NULL;
            }
        }
        out = text((const unsigned char *)ps->scratch, w - ps->scratch);
    }
    if (out == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) PyErr_Clear();
    return out;
}

/* A JSON integer (no fraction or exponent) that fits int64: 1 read, 0 not one (fall back). */
static int integer(parser *ps, long long *out) {
    const unsigned char *p = ps->p;
    int neg = 0;
    if (p < ps->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= ps->end || *p < '0' || *p > '9') return 0;
    if (*p == '0' && p + 1 < ps->end && p[1] >= '0' && p[1] <= '9') return 0; /* a leading zero */
    unsigned long long v = 0;
    int digits = 0;
    while (p < ps->end && *p >= '0' && *p <= '9') {
        if (++digits > 18) return 0; /* past what certainly fits: left to orjson */
        v = v * 10 + (unsigned long long)(*p - '0');
        p++;
    }
    if (p < ps->end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
    ps->p = p;
    *out = neg ? -(long long)v : (long long)v;
    return 1;
}

static int literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

/* "extFields": an object of string values, or null. New dict; NULL: fall back (or an error). */
static PyObject *ext_fields(parser *ps) {
    if (literal(ps, "null")) return PyDict_New();
    if (ps->p >= ps->end || *ps->p != '{') return NULL;
    ps->p++;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return d;
    }
    for (;;) {
        skip_ws(ps);
        PyObject *k = string(ps);
        if (k == NULL) goto fail;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            Py_DECREF(k);
            goto fail;
        }
        ps->p++;
        skip_ws(ps);
        PyObject *v = string(ps);
        if (v == NULL) {
            Py_DECREF(k);
            goto fail;
        }
        int r = PyDict_SetItem(d, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
        if (r < 0) goto fail;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return d;
        }
        goto fail;
    }
fail:
    Py_DECREF(d);
    return NULL;
}

#define IS_KEY(name) (klen == (Py_ssize_t)sizeof(name) - 1 && memcmp(key, name, sizeof(name) - 1) == 0)

typedef struct {
    long long code, opaque, flag, version;
    PyObject *remark;   /* new reference: str or None */
    PyObject *ext;      /* new reference: dict */
    PyObject *language; /* new reference: a value of `languages`, an int, or None (absent) */
} header;

static void header_clear(header *h) {
    Py_CLEAR(h->remark);
    Py_CLEAR(h->ext);
    Py_CLEAR(h->language);
}

/* Parse the JSON header p[0:n] into *h: 1 parsed, 0 not a header this parser takes (no error
 * set; the caller falls back), -1 an error (MemoryError). *h holds nothing unless it returns 1. */
static int parse_header(const unsigned char *p, Py_ssize_t n, PyObject *languages, header *h) {
    parser ps = {p, p + n, NULL, 0};
    h->code = h->opaque = h->flag = h->version = 0;
    h->remark = Py_NewRef(Py_None);
    h->ext = NULL;
    h->language = Py_NewRef(Py_None);
    skip_ws(&ps);
    if (ps.p >= ps.end || *ps.p != '{') goto fallback;
    ps.p++;
    skip_ws(&ps);
    if (ps.p < ps.end && *ps.p == '}') {
        ps.p++;
        goto closed;
    }
    for (;;) {
        skip_ws(&ps);
        const unsigned char *key;
        Py_ssize_t klen;
        int escaped;
        if (!span(&ps, &key, &klen, &escaped) || escaped) goto fallback; /* members are plain names */
        skip_ws(&ps);
        if (ps.p >= ps.end || *ps.p != ':') goto fallback;
        ps.p++;
        skip_ws(&ps);
        int ok = 0;
        if (IS_KEY("code")) ok = integer(&ps, &h->code);
        else if (IS_KEY("opaque")) ok = integer(&ps, &h->opaque);
        else if (IS_KEY("flag")) ok = integer(&ps, &h->flag);
        else if (IS_KEY("version")) ok = integer(&ps, &h->version);
        else if (IS_KEY("extFields")) {
            PyObject *d = ext_fields(&ps);
            if (d != NULL) {
                Py_XSETREF(h->ext, d);
                ok = 1;
            }
        } else if (IS_KEY("remark")) {
            if (literal(&ps, "null")) {
                Py_SETREF(h->remark, Py_NewRef(Py_None));
                ok = 1;
            } else {
                PyObject *str = string(&ps);
                if (str != NULL) {
                    if (PyUnicode_GET_LENGTH(str) == 0) Py_SETREF(str, Py_NewRef(Py_None));
                    Py_SETREF(h->remark, str);
                    ok = 1;
                }
            }
        } else if (IS_KEY("language")) {
            long long num;
            if (ps.p < ps.end && *ps.p == '"') {
                PyObject *str = string(&ps);
                if (str != NULL) {
                    PyObject *lang = PyDict_GetItemWithError(languages, str);
                    Py_DECREF(str);
                    if (lang != NULL) {
                        Py_SETREF(h->language, Py_NewRef(lang));
                        ok = 1;
                    }
                }
            } else if (integer(&ps, &num)) {
                PyObject *i = PyLong_FromLongLong(num);
                if (i != NULL) {
                    Py_SETREF(h->language, i);
                    ok = 1;
                }
            }
        } else if (IS_KEY("serializeTypeCurrentRPC")) {
            const unsigned char *v;
            Py_ssize_t vlen;
            int esc;
            ok = span(&ps, &v, &vlen, &esc); /* ignored, as the Python function ignores it */
        }
        if (!ok) goto fallback;
        skip_ws(&ps);
        if (ps.p < ps.end && *ps.p == ',') {
            ps.p++;
            continue;
        }
        if (ps.p < ps.end && *ps.p == '}') {
            ps.p++;
            break;
        }
        goto fallback;
    }
closed:
    skip_ws(&ps);
    if (ps.p != ps.end) goto fallback;
    if (h->ext == NULL && (h->ext = PyDict_New()) == NULL) goto error;
    PyMem_Free(ps.scratch);
    return 1;
fallback:
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        PyMem_Free(ps.scratch);
        header_clear(h);
        return 0;
    }
error:
    PyMem_Free(ps.scratch);
    header_clear(h);
    return -1;
}

static PyObject *decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decode(data, languages: dict)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    header h;
    int r = parse_header((const unsigned char *)view.buf, view.len, args[1], &h);
    PyBuffer_Release(&view);
    if (r <= 0) return r < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *result = Py_BuildValue("(LLLOOOL)", h.code, h.opaque, h.flag, h.remark, h.ext, h.language, h.version);
    header_clear(&h);
    return result;
}

/* decode_payload(buf, start, end, languages, cls, json, other) -> cls instance | None
 *
 * The frame payload buf[start:end] (after the length field: the header word, the header, the
 * body) as _decode_payload decodes it, for a JSON header parse_header takes: an instance of
 * `cls` (RemotingCommand) made without running its __init__, every field set here (code, opaque,
 * flag, remark, ext_fields, body: a copy, language: `other` when absent, version,
 * serialize_type: `json`). None for anything else (a binary header, a bad header length, a
 * header this parser leaves to orjson): _decode_payload then decodes the frame (and raises). */
static PyObject *decode_payload(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    static PyObject *names[9], *no_args;
    static const char *const fields[9] = {"code", "opaque", "flag", "remark", "ext_fields", "body", "language",
                                          "version", "serialize_type"};
    if (no_args == NULL) {
        for (int i = 0; i < 9; i++) {
            if (names[i] == NULL && (names[i] = PyUnicode_InternFromString(fields[i])) == NULL) return NULL;
        }
        if ((no_args = PyTuple_New(0)) == NULL) return NULL;
    }
    if (nargs != 7 || !PyDict_Check(args[3]) || !PyType_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "decode_payload(buf, start, end, languages: dict, cls: type, json, other)");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    if (start < 0 || end > view.len || end - start < 4) goto fallback;
    uint32_t word = ((uint32_t)b[start] << 24) | ((uint32_t)b[start + 1] << 16) | ((uint32_t)b[start + 2] << 8) |
                    (uint32_t)b[start + 3];
    Py_ssize_t hstart = start + 4, hlen = (Py_ssize_t)(word & 0xFFFFFF);
    if ((word >> 24) != 0 || hlen > end - hstart) goto fallback; /* not JSON, or a bad length */
    header h;
    int r = parse_header(b + hstart, hlen, args[3], &h);
    if (r < 0) goto done;
    if (r == 0) goto fallback;
    PyObject *body = PyBytes_FromStringAndSize((const char *)b + hstart + hlen, end - hstart - hlen);
    PyObject *cmd = body == NULL ? NULL : PyBaseObject_Type.tp_new((PyTypeObject *)args[4], no_args, NULL);
    if (cmd != NULL) {
        PyObject *values[9] = {PyLong_FromLongLong(h.code), PyLong_FromLongLong(h.opaque),
                               PyLong_FromLongLong(h.flag), Py_NewRef(h.remark), Py_NewRef(h.ext), Py_NewRef(body),
                               Py_NewRef(h.language == Py_None ? args[6] : h.language),
                               PyLong_FromLongLong(h.version), Py_NewRef(args[5])};
        for (int i = 0; i < 9; i++) {
            if (cmd != NULL && (values[i] == NULL || PyObject_SetAttr(cmd, names[i], values[i]) < 0)) Py_CLEAR(cmd);
            Py_XDECREF(values[i]);
        }
    }
    Py_XDECREF(body);
    header_clear(&h);
    result = cmd;
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return result;
}

/* ----------------------------------------------------------------------------------------------
 * encode_head(cmd, names, max_frame) -> bytes | None
 *
 * The first part of encode_frame_parts(cmd) for a JSON command: the length field, the header
 * word and the header as encode_json_header writes it (orjson with sorted keys: "code",
 * "extFields" with its keys sorted, "flag", "language" by name from `names`, "opaque", "remark"
 * when not None, "serializeTypeCurrentRPC":"JSON", "version"; strings escaped as orjson escapes
 * them), byte for byte. None for anything else (another serialize type, a value that is not a
 * str or an int of 64 bits, a language not in `names`, a str that is not UTF-8, a frame over
 * `max_frame` bytes): the Python code then encodes it (or raises).
 */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} out_buf;

static int out_grow(out_buf *o, Py_ssize_t n) {
    if (o->len + n <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + n) cap *= 2;
    char *d = PyMem_Realloc(o->data, (size_t)cap);
    if (d == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = d;
    o->cap = cap;
    return 0;
}

static int out_put(out_buf *o, const char *p, Py_ssize_t n) {
    if (out_grow(o, n) < 0) return -1;
    memcpy(o->data + o->len, p, (size_t)n);
    o->len += n;
    return 0;
}

#define OUT_LIT(o, lit) out_put((o), (lit), (Py_ssize_t)sizeof(lit) - 1)

/* a JSON string of str `s` (orjson's escapes); 1 written, 0 not UTF-8 (no error set), -1 error */
static int out_str(out_buf *o, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (out_grow(o, 2 + 6 * n) < 0) return -1;
    char *w = o->data + o->len;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *w++ = (char)c;
            continue;
        }
        *w++ = '\\';
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\b': *w++ = 'b'; break;
        case '\t': *w++ = 't'; break;
        case '\n': *w++ = 'n'; break;
        case '\f': *w++ = 'f'; break;
        case '\r': *w++ = 'r'; break;
        default:
            *w++ = 'u';
            *w++ = '0';
            *w++ = '0';
            *w++ = "0123456789abcdef"[c >> 4];
            *w++ = "0123456789abcdef"[c & 0xF];
        }
    }
    *w++ = '"';
    o->len = w - o->data;
    return 1;
}

/* an int of 64 bits; 1 written, 0 not one (no error set), -1 error */
static int out_int(out_buf *o, PyObject *v) {
    if (!PyLong_Check(v) || PyBool_Check(v)) return 0; /* an IntEnum is its value; a bool is not */
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (overflow) return 0;
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%lld", x);
    return out_put(o, digits, n) < 0 ? -1 : 1;
}

static int utf8_less(PyObject *a, PyObject *b) {
    /* keys compare as orjson sorts them: by their UTF-8 bytes (code point order) */
    int r = PyUnicode_Compare(a, b);
    return r < 0;
}

static PyObject *encode_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    static PyObject *names[9];
    static const char *const fields[9] = {"code", "opaque", "flag", "remark", "ext_fields", "body", "language",
                                          "version", "serialize_type"};
    if (names[8] == NULL) {
        for (int i = 0; i < 9; i++) {
            if (names[i] == NULL && (names[i] = PyUnicode_InternFromString(fields[i])) == NULL) return NULL;
        }
    }
    if (nargs != 3 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "encode_head(cmd, names: dict, max_frame: int)");
        return NULL;
    }
    Py_ssize_t max_frame = PyLong_AsSsize_t(args[2]);
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
    PyObject *v[9] = {NULL};
    PyObject *result = NULL, **keys = NULL;
    out_buf o = {NULL, 0, 0};
    int r = 1;
    for (int i = 0; i < 9; i++) {
        if ((v[i] = PyObject_GetAttr(args[0], names[i])) == NULL) goto done;
    }
    /* serialize_type: JSON (0) only */
    if (!PyLong_Check(v[8]) || PyLong_AsLong(v[8]) != 0) goto fallback;
    PyObject *lang = PyDict_GetItemWithError(args[1], v[6]);
    if (lang == NULL) {
        if (PyErr_Occurred()) goto done;
        goto fallback;
    }
    if (!PyDict_CheckExact(v[4]) || (v[3] != Py_None && !PyUnicode_CheckExact(v[3])) || !PyUnicode_CheckExact(lang))
        goto fallback;
    Py_ssize_t body_len = PyObject_Length(v[5]);
    if (body_len < 0) goto done;
    if (out_grow(&o, 256) < 0) goto done;
    o.len = 8; /* the length field and the header word, filled last */
    if (OUT_LIT(&o, "{\"code\":") < 0 || (r = out_int(&o, v[0])) <= 0) goto check;
    if (OUT_LIT(&o, ",\"extFields\":{") < 0) goto done;
    Py_ssize_t nkeys = PyDict_GET_SIZE(v[4]), filled = 0, pos = 0;
    keys = PyMem_Calloc(nkeys ? (size_t)nkeys : 1, sizeof(PyObject *));
    if (keys == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *k, *val;
    while (PyDict_Next(v[4], &pos, &k, &val)) {
        if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(val)) goto fallback;
        /* insertion sort: a header has a handful of keys */
        Py_ssize_t j = filled++;
        while (j > 0 && utf8_less(k, keys[j - 1])) {
            keys[j] = keys[j - 1];
            j--;
        }
        keys[j] = k;
    }
    if (PyErr_Occurred()) goto done;
    for (Py_ssize_t i = 0; i < filled; i++) {
        if (i && OUT_LIT(&o, ",") < 0) goto done;
        if ((r = out_str(&o, keys[i])) <= 0 || OUT_LIT(&o, ":") < 0) goto check;
        PyObject *item = PyDict_GetItemWithError(v[4], keys[i]);
        if (item == NULL) goto done;
        if ((r = out_str(&o, item)) <= 0) goto check;
    }
    if (OUT_LIT(&o, "},\"flag\":") < 0 || (r = out_int(&o, v[2])) <= 0) goto check;
    if (OUT_LIT(&o, ",\"language\":") < 0 || (r = out_str(&o, lang)) <= 0) goto check;
    if (OUT_LIT(&o, ",\"opaque\":") < 0 || (r = out_int(&o, v[1])) <= 0) goto check;
    if (v[3] != Py_None && (OUT_LIT(&o, ",\"remark\":") < 0 || (r = out_str(&o, v[3])) <= 0)) goto check;
    if (OUT_LIT(&o, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":") < 0 || (r = out_int(&o, v[7])) <= 0)
        goto check;
    if (OUT_LIT(&o, "}") < 0) goto done;
    {
        Py_ssize_t hlen = o.len - 8, total = 4 + hlen + body_len;
        if (hlen > 0xFFFFFF || total + 4 > max_frame) goto fallback;
        unsigned char *w = (unsigned char *)o.data;
        uint32_t t = (uint32_t)total, word = (uint32_t)hlen; /* serialize type JSON: high byte 0 */
        w[0] = (unsigned char)(t >> 24), w[1] = (unsigned char)(t >> 16), w[2] = (unsigned char)(t >> 8);
        w[3] = (unsigned char)t;
        w[4] = (unsigned char)(word >> 24), w[5] = (unsigned char)(word >> 16), w[6] = (unsigned char)(word >> 8);
        w[7] = (unsigned char)word;
        result = PyBytes_FromStringAndSize(o.data, o.len);
    }
    goto done;
check:
    if (r < 0 || PyErr_Occurred()) goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < 9; i++) Py_XDECREF(v[i]);
    PyMem_Free(keys);
    PyMem_Free(o.data);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL,
     "decode(data, languages) -> (code, opaque, flag, remark, ext_fields, language, version), "
     "or None for the Python decoder"},
    {"decode_payload", (PyCFunction)(void (*)(void))decode_payload, METH_FASTCALL,
     "decode_payload(buf, start, end, languages, cls, json, other) -> a RemotingCommand, or None for "
     "the Python decoder"},
    {"encode_head", (PyCFunction)(void (*)(void))encode_head, METH_FASTCALL,
     "encode_head(cmd, names, max_frame) -> length field + header word + JSON header, or None for "
     "the Python encoder"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_header", NULL, 0, methods};

PyMODINIT_FUNC PyInit__header(void) { return PyModule_Create(&module); }
