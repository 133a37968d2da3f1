/*
 * http_main: the `parsa serve` command (options, then http_server_run).
 */
#ifndef HTTP_MAIN_H
#define HTTP_MAIN_H

/* argv[0] = "serve".  Returns the exit status: 0 after a clean stop,
 * 1 runtime error, 2 usage error. */
int http_main(int argc, char **argv);

#endif /* HTTP_MAIN_H */
