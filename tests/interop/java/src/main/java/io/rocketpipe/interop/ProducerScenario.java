package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * DefaultMQProducer against a name server: sync, async, oneway, batch and delay-level sends.
 * Args: namesrv topic group count. Message i of mode M has body "M-i", tags "Tag" + (i % 3),
 * keys "key-M-i uniq", properties mode=M, idx=i, "ünï"="çødé" (sent as UTF-8).
 */
public final class ProducerScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        int n = Integer.parseInt(args[3]);
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setVipChannelEnabled(false);
        p.start();
        Map<String, Object> out = Json.obj();
        try {
            List<Object> sync = Json.list();
            for (int i = 0; i < n; i++) {
                sync.add(Json.sendResult(p.send(msg(topic, "sync", i))));
            }
            out.put("sync", sync);

            List<Object> async = Json.list();
            List<String> asyncErrors = new ArrayList<>();
            CountDownLatch latch = new CountDownLatch(n);
            for (int i = 0; i < n; i++) {
                p.send(msg(topic, "async", i), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult r) {
                        synchronized (async) {
                            async.add(Json.sendResult(r));
                        }
                        latch.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        synchronized (asyncErrors) {
                            asyncErrors.add(String.valueOf(e));
                        }
                        latch.countDown();
                    }
                });
            }
            out.put("asyncCompleted", latch.await(30, TimeUnit.SECONDS));
            out.put("async", async);
            out.put("asyncErrors", asyncErrors);

            for (int i = 0; i < n; i++) {
                p.sendOneway(msg(topic, "oneway", i));
            }

            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                batch.add(msg(topic, "batch", i));
            }
            out.put("batch", Json.sendResult(p.send(batch)));

            Message delayed = msg(topic, "delay", 0);
            delayed.setDelayTimeLevel(2);
            out.put("delaySentAt", System.currentTimeMillis());
            out.put("delay", Json.sendResult(p.send(delayed)));

            Message big = new Message(topic, "BIG", "key-big", new byte[10000]);
            out.put("big", Json.sendResult(p.send(big)));
            out.put("ok", true);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", Json.error(e));
        } finally {
            p.shutdown();
        }
        Json.print(out);
    }

    static Message msg(String topic, String mode, int i) {
        Message m = new Message(topic, "Tag" + (i % 3), "key-" + mode + "-" + i + " uniq", (mode + "-" + i).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("mode", mode);
        m.putUserProperty("idx", Integer.toString(i));
        m.putUserProperty("\u00fcn\u00ef", "\u00e7\u00f8d\u00e9");
        return m;
    }
}
