package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.RequestTimeoutException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Request-reply with the official client (4.6+: client 5.3.x and 4.9.x).
 * Args: namesrv topic group mode count timeoutSeconds.
 *
 * <ul>
 *   <li>request: DefaultMQProducer.request(msg, timeoutSeconds * 1000) count times, one after
 *       the other. Request i has body "request-i", tags "Tag" + (i % 3), keys "key-i", user
 *       properties idx=i and "ünï"="çødé". Each outcome is recorded: the request's
 *       CORRELATION_ID / REPLY_TO_CLIENT / TTL and the reply (topic, body, properties, hosts,
 *       timestamps), or the exception (with the RequestTimeoutException's response code).
 *       Clients 5.3.1 to 5.3.3 return from this form as soon as the request's send is
 *       acknowledged (apache/rocketmq#8272, reverted by #9608): a reply that comes later is
 *       never waited for, the call throws RequestTimeoutException at once.</li>
 *   <li>request-callback: the same count requests, all at once, with
 *       request(msg, MessageQueueSelector, arg, RequestCallback, timeout) (the selector picks
 *       queue idx % queues); waits for every callback. This form has neither the 5.3.1+ early
 *       return nor request(msg, RequestCallback, timeout)'s onSuccess(null) after the send.</li>
 *   <li>reply: a DefaultMQPushConsumer of group on topic (from the first offset) answers each
 *       request with MessageUtil.createReplyMessage(request, "re:" + body), user property
 *       answeredBy=java, sent by a DefaultMQProducer of group + "_P"; ends when count requests
 *       were answered (or at the timeout). Records every request seen and every reply's
 *       SendResult (or the exception of createReplyMessage / send).</li>
 * </ul>
 *
 * <p>Prints one JSON line: ok, mode, clientId, elapsedMs, then results (request) or requests,
 * sends, errors (reply).
 */
public final class RequestReplyScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        String mode = args[3];
        int n = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;
        Map<String, Object> out = Json.obj();
        out.put("mode", mode);
        long t0 = System.currentTimeMillis();
        try {
            switch (mode) {
                case "request":
                    request(ns, topic, group, n, timeoutMs, out);
                    break;
                case "request-callback":
                    requestCallback(ns, topic, group, n, timeoutMs, out);
                    break;
                case "reply":
                    reply(ns, topic, group, n, timeoutMs, out);
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
            out.put("ok", true);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", Json.error(e));
        }
        out.put("elapsedMs", System.currentTimeMillis() - t0);
        Json.print(out);
        System.exit(0);  // do not depend on the client's executors all being shut down
    }

    static DefaultMQProducer requester(String ns, String group, Map<String, Object> out) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-request-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setVipChannelEnabled(false);
        p.start();
        out.put("clientId", p.buildMQClientId());
        return p;
    }

    static Message requestMessage(String topic, int i) {
        Message m = new Message(topic, "Tag" + (i % 3), "key-" + i, ("request-" + i).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("idx", Integer.toString(i));
        m.putUserProperty("\u00fcn\u00ef", "\u00e7\u00f8d\u00e9");
        return m;
    }

    static void requestProperties(Message m, Map<String, Object> r) {
        r.put("correlationId", m.getProperty("CORRELATION_ID"));
        r.put("replyToClient", m.getProperty("REPLY_TO_CLIENT"));
        r.put("ttl", m.getProperty("TTL"));
    }

    static void request(String ns, String topic, String group, int n, long timeoutMs, Map<String, Object> out) throws Exception {
        DefaultMQProducer p = requester(ns, group, out);
        List<Object> results = Json.list();
        out.put("results", results);
        try {
            for (int i = 0; i < n; i++) {
                Message m = requestMessage(topic, i);
                Map<String, Object> r = Json.obj();
                long begin = System.currentTimeMillis();
                try {
                    Message reply = p.request(m, timeoutMs);
                    r.put("ok", true);
                    r.put("reply", reply(reply));
                } catch (RequestTimeoutException e) {
                    r.put("ok", false);
                    r.put("timeout", true);
                    r.put("responseCode", e.getResponseCode());
                    r.put("error", Json.error(e));
                } catch (Exception e) {
                    r.put("ok", false);
                    r.put("error", Json.error(e));
                }
                r.put("elapsedMs", System.currentTimeMillis() - begin);
                requestProperties(m, r);
                results.add(r);
            }
        } finally {
            p.shutdown();
        }
    }

    static void requestCallback(String ns, String topic, String group, int n, long timeoutMs, Map<String, Object> out) throws Exception {
        DefaultMQProducer p = requester(ns, group, out);
        List<Object> results = Json.list();
        out.put("results", results);
        CountDownLatch latch = new CountDownLatch(n);
        MessageQueueSelector byIdx = (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size());
        try {
            for (int i = 0; i < n; i++) {
                Message m = requestMessage(topic, i);
                Map<String, Object> r = Json.obj();
                long begin = System.currentTimeMillis();
                p.request(m, byIdx, i, new RequestCallback() {
                    @Override
                    public void onSuccess(Message reply) {
                        synchronized (r) {
                            r.put("ok", reply != null);
                            r.put("reply", reply == null ? null : reply(reply));
                            r.put("elapsedMs", System.currentTimeMillis() - begin);
                        }
                        latch.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        synchronized (r) {
                            r.put("ok", false);
                            r.put("timeout", e instanceof RequestTimeoutException);
                            r.put("error", Json.error(e));
                            r.put("elapsedMs", System.currentTimeMillis() - begin);
                        }
                        latch.countDown();
                    }
                }, timeoutMs);
                synchronized (r) {
                    requestProperties(m, r);
                }
                results.add(r);
            }
            out.put("allCalledBack", latch.await(timeoutMs + 5000, TimeUnit.MILLISECONDS));
        } finally {
            p.shutdown();
        }
    }

    /** What DefaultMQProducer.request returned: a MessageExt built from the broker's push. */
    static Map<String, Object> reply(Message reply) {
        Map<String, Object> m = Json.obj();
        m.put("class", reply.getClass().getSimpleName());
        m.put("topic", reply.getTopic());
        m.put("body", new String(reply.getBody(), StandardCharsets.UTF_8));
        m.put("flag", reply.getFlag());
        m.put("properties", new TreeMap<>(reply.getProperties()));
        if (reply instanceof MessageExt) {
            MessageExt e = (MessageExt) reply;
            m.put("queueId", e.getQueueId());
            m.put("sysFlag", e.getSysFlag());
            m.put("bornHost", String.valueOf(e.getBornHost()));
            m.put("storeHost", String.valueOf(e.getStoreHost()));
            m.put("bornTimestamp", e.getBornTimestamp());
            m.put("storeTimestamp", e.getStoreTimestamp());
            m.put("reconsumeTimes", e.getReconsumeTimes());
        }
        return m;
    }

    static void reply(String ns, String topic, String group, int n, long timeoutMs, Map<String, Object> out) throws Exception {
        DefaultMQProducer replier = new DefaultMQProducer(group + "_P");
        replier.setNamesrvAddr(ns);
        replier.setInstanceName("interop-replier-" + System.nanoTime());
        replier.setSendMsgTimeout(10000);
        replier.setVipChannelEnabled(false);
        replier.start();
        List<Object> requests = Json.list();
        List<Object> sends = Json.list();
        List<Object> errors = Json.list();
        AtomicInteger answered = new AtomicInteger();
        DefaultMQPushConsumer c = RedeliveryListener.consumer(ns, group, "interop-reply-");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                synchronized (requests) {
                    requests.add(Json.message(m));
                }
                try {
                    String body = "re:" + new String(m.getBody(), StandardCharsets.UTF_8);
                    Message reply = MessageUtil.createReplyMessage(m, body.getBytes(StandardCharsets.UTF_8));
                    reply.putUserProperty("answeredBy", "java");
                    Map<String, Object> sent = Json.sendResult(replier.send(reply));
                    sent.put("replyToClient", MessageUtil.getReplyToClient(m));
                    synchronized (sends) {
                        sends.add(sent);
                    }
                } catch (Exception e) {
                    synchronized (errors) {
                        errors.add(Json.error(e));
                    }
                }
                answered.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long t0 = System.currentTimeMillis();
        c.start();
        out.put("clientId", c.buildMQClientId());
        while (answered.get() < n && System.currentTimeMillis() - t0 < timeoutMs) {
            Thread.sleep(50);
        }
        out.put("done", answered.get() >= n);
        c.shutdown();
        replier.shutdown();
        synchronized (requests) {
            out.put("requests", requests);
        }
        synchronized (sends) {
            out.put("sends", sends);
        }
        synchronized (errors) {
            out.put("errors", errors);
        }
    }
}
