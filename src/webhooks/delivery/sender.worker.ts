// The worker side of sender-thread.ts: an ordinary CallbackClient (same pool, same address policy, same
// results) fed batches of requests, answering with batches of results.
import { parentPort, workerData } from 'node:worker_threads';
import { AddressPolicy } from './address-policy.ts';
import { CallbackClient, type AttemptResult, type CallbackClientSettings } from './callback-client.ts';

export type SenderSettings = Omit<CallbackClientSettings, 'policy'> & { allowedNetworks: string[] };

export interface SenderRequest {
  id: number;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export type SenderResult = [id: number, result: AttemptResult];

type Message = { requests: SenderRequest[] } | { close: true };

if (parentPort) serve(parentPort, workerData as SenderSettings);

function serve(port: NonNullable<typeof parentPort>, settings: SenderSettings): void {
  const client = new CallbackClient({ ...settings, policy: new AddressPolicy(settings.allowedNetworks) });
  let results: SenderResult[] = [];
  let inFlight = 0;
  let closing = false;
  const flush = () => {
    if (results.length > 0) port.postMessage({ results });
    results = [];
    if (closing && inFlight === 0) port.close(); // nothing keeps the thread alive: it exits
  };
  const reply = (id: number, result: AttemptResult) => {
    inFlight--;
    if (results.length === 0) setImmediate(flush);
    results.push([id, result]);
  };
  port.on('message', (message: Message) => {
    if ('close' in message) {
      // Aborts the attempts in flight; each reports its failure before the thread ends.
      closing = true;
      void client.close().then(() => setImmediate(flush));
      return;
    }
    for (const { id, url, headers, body } of message.requests) {
      inFlight++;
      void client.post(url, headers, body).then((result) => reply(id, result));
    }
  });
}
