/* connect_i386: connects to the proxy (127.0.0.1:3128) through i386's
 * system calls from an x86-64 program (int 0x80): the direct connect (362)
 * and socketcall(SYS_CONNECT) (102), then asks for a URL the rules refuse.
 * Addresses are in static storage, below 4 GiB (built -static -no-pie). */
#include <stdio.h>
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
static void get(int s) {
  const char *req = "GET http://127.0.0.1:9/ HTTP/1.0\r\n\r\n";
  write(s, req, strlen(req));
  char buf[200]; int n = read(s, buf, sizeof buf - 1); if (n > 0) { buf[n] = 0; printf("  %.30s\n", buf); }
}
int main(void) {
  a.sin_family = AF_INET; a.sin_port = htons(3128); a.sin_addr.s_addr = htonl(0x7f000001);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  printf("i386 connect=%ld\n", i386call(362, s, (long)&a, sizeof a)); get(s);
  s = socket(AF_INET, SOCK_STREAM, 0);
  args[0] = s; args[1] = (unsigned int)(long)&a; args[2] = sizeof a;
  printf("i386 socketcall connect=%ld\n", i386call(102, 3, (long)args, 0)); get(s);
  return 0;
}
