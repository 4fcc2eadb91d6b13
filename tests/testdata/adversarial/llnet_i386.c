/* llnet_i386: in the landlock tier's --net filter, i386's system calls
 * from an x86-64 program (int 0x80): the direct connect (362) to the proxy
 * (its port from http_proxy) is made by the supervisor like x86-64's; the
 * direct connect to argv[1]'s port (a server the rules allow, bypassing
 * the proxy) is refused; socketcall (102), whose arguments the filter
 * cannot read, is refused whole; a UDP socket by the direct socket call
 * (359) is refused. Addresses are in static storage, below 4 GiB (built
 * -static -no-pie). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
static struct sockaddr_in a;
static unsigned int args[3];
static long i386call(long nr, long b, long c, long d) {
  long r;
  __asm__ volatile ("int $0x80" : "=a"(r) : "a"(nr), "b"(b), "c"(c), "d"(d) : "memory");
  return r;
}
int main(int argc, char **argv) {
  const char *proxy = getenv("http_proxy");
  if (argc != 2 || !proxy || !strrchr(proxy, ':')) { fprintf(stderr, "usage: llnet_i386 PORT (with http_proxy set)\n"); return 2; }
  int proxyPort = atoi(strrchr(proxy, ':') + 1);
  a.sin_family = AF_INET; a.sin_port = htons(proxyPort); a.sin_addr.s_addr = htonl(0x7f000001);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  printf("i386 connect proxy=%ld\n", i386call(362, s, (long)&a, sizeof a));
  const char *req = "GET http://127.0.0.1:9/ HTTP/1.0\r\n\r\n";
  if (write(s, req, strlen(req)) > 0) {
    char buf[200]; int n = read(s, buf, sizeof buf - 1); if (n > 0) { buf[n] = 0; printf("  %.30s\n", buf); }
  }
  s = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_port = htons(atoi(argv[1]));
  printf("i386 connect direct=%ld\n", i386call(362, s, (long)&a, sizeof a));
  s = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_port = htons(proxyPort);
  args[0] = s; args[1] = (unsigned int)(long)&a; args[2] = sizeof a;
  printf("i386 socketcall connect=%ld\n", i386call(102, 3, (long)args, 0));
  printf("i386 socket udp=%ld\n", i386call(359, AF_INET, SOCK_DGRAM, 0));
  return 0;
}
