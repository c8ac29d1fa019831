import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP relay on a free loopback port in front of `port`: it counts the connections it is given and can close the next ones at once. */
export interface TcpRelay {
  readonly server: Server;
  readonly port: number;
  /** Connections accepted so far. */
  opened(): number;
  /** Closes the next `n` connections as soon as they are accepted (as HAProxy does with one routed to a server dying at that instant). */
  closeNext(n: number): void;
}

export async function tcpRelay(port: number): Promise<TcpRelay> {
  let opened = 0;
  let toClose = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    opened += 1;
    if (toClose > 0) {
      toClose -= 1;
      client.destroy();
      return;
    }
    const upstream = connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((socket) => socket.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as { port: number }).port,
    opened: () => opened,
    closeNext: (n) => (toClose = n),
  };
}
