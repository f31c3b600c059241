/* Input of test_docs's metric scanner, never compiled. */
#define IN_HEADER "hibernator_in_header"
