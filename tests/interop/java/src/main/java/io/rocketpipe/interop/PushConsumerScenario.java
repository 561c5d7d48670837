package io.rocketpipe.interop;

import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;

/**
 * DefaultMQPushConsumer (CLUSTERING, concurrently) from the first offset.
 * Args: namesrv topic group expression expectedDistinct timeoutSeconds.
 * A message with user property redeliver=1 is answered RECONSUME_LATER on its first delivery;
 * the scenario ends when expectedDistinct message ids were seen and every redeliver=1 message
 * came back (or at the timeout). With expectedDistinct 0 it consumes for the whole timeout
 * (several instances of one group, each seeing its share). Prints every delivery.
 */
public final class PushConsumerScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        String expression = args[3];
        int expected = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;
        RedeliveryListener listener = new RedeliveryListener();
        DefaultMQPushConsumer c = RedeliveryListener.consumer(ns, group, "interop-");
        c.subscribe(topic, expression);
        c.registerMessageListener(listener);
        long t0 = System.currentTimeMillis();
        c.start();
        boolean done = false;
        while (System.currentTimeMillis() - t0 < timeoutMs) {
            done = listener.done(expected);
            if (done && expected > 0) {
                break;
            }
            Thread.sleep(100);
        }
        // let the offsets reach the broker before shutting down (shutdown persists them too)
        Thread.sleep(500);
        c.shutdown();
        Map<String, Object> out = Json.obj();
        listener.putResult(out, done, c, t0, Json.obj());
        Json.print(out);
    }
}
