/* The demo server's request parser: complete and partial heads, keep-alive rules, bodies,
 * pipelined requests, malformed input, query parameters. */
#include "check.h"
#include "http_parse.h"

static http_parse_result parse(const char *s, http_request *req) {
    return http_parse_request(s, strlen(s), req);
}

static void test_simple_get(void) {
    http_request req;
    const char *s = "GET /work?ms=15 HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(parse(s, &req) == HTTP_PARSE_OK);
    CHECK_STR(req.method, "GET");
    CHECK_STR(req.target, "/work?ms=15");
    CHECK(req.keep_alive);
    CHECK_EQ_U64(req.length, strlen(s));
    CHECK(http_path_is(&req, "/work"));
    CHECK(!http_path_is(&req, "/wor"));
    CHECK(!http_path_is(&req, "/"));
    CHECK_EQ_U64(http_query_long(&req, "ms", 1), 15);
    CHECK_EQ_U64(http_query_long(&req, "m", 7), 7);
}

static void test_incomplete(void) {
    http_request req;
    CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\n", &req) == HTTP_PARSE_INCOMPLETE);
    CHECK(parse("", &req) == HTTP_PARSE_INCOMPLETE);
    /* The head is there but not the announced body. */
    CHECK(parse("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", &req) == HTTP_PARSE_INCOMPLETE);
}

static void test_connection_rules(void) {
    http_request req;
    CHECK(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK(!req.keep_alive);
    CHECK(parse("GET / HTTP/1.1\r\nconnection: Upgrade, CLOSE\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK(!req.keep_alive);
    CHECK(parse("GET / HTTP/1.0\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK(!req.keep_alive);
    CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK(req.keep_alive);
    CHECK(parse("GET / HTTP/1.1\r\nX-Connection: close\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK(req.keep_alive);
}

static void test_body_and_pipelining(void) {
    http_request req;
    const char *two = "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\n";
    CHECK(parse(two, &req) == HTTP_PARSE_OK);
    CHECK_STR(req.method, "POST");
    size_t first = strlen("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    CHECK_EQ_U64(req.length, first);
    CHECK(http_parse_request(two + first, strlen(two) - first, &req) == HTTP_PARSE_OK);
    CHECK_STR(req.target, "/b");
}

static void test_malformed(void) {
    http_request req;
    CHECK(parse("GARBAGE\r\n\r\n", &req) == HTTP_PARSE_BAD);
    CHECK(parse("GET / HTTP/2\r\n\r\n", &req) == HTTP_PARSE_BAD);
    CHECK(parse("GET / HTTP/1.1\r\nno colon here\r\n\r\n", &req) == HTTP_PARSE_BAD);
    CHECK(parse("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", &req) == HTTP_PARSE_BAD);
    CHECK(parse("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &req) == HTTP_PARSE_BAD);
    char longer[1024];
    memset(longer, 'a', sizeof longer);
    memcpy(longer, "GET /", 5);
    strcpy(longer + 900, " HTTP/1.1\r\n\r\n");
    CHECK(parse(longer, &req) == HTTP_PARSE_BAD); /* target longer than the server keeps */
}

static void test_query(void) {
    http_request req;
    CHECK(parse("GET /work?x=1&ms=250&y HTTP/1.1\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK_EQ_U64(http_query_long(&req, "ms", 1), 250);
    CHECK_EQ_U64(http_query_long(&req, "x", 0), 1);
    CHECK_EQ_U64(http_query_long(&req, "y", 9), 9);
    CHECK(parse("GET /work?ms=abc HTTP/1.1\r\n\r\n", &req) == HTTP_PARSE_OK);
    CHECK_EQ_U64(http_query_long(&req, "ms", 4), 4);
}

int main(void) {
    test_simple_get();
    test_incomplete();
    test_connection_rules();
    test_body_and_pipelining();
    test_malformed();
    test_query();
    return d9t_summary("test_uv_server_http_parse");
}
