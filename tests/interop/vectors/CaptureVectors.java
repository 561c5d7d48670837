/*
 * Golden vectors from the official Apache RocketMQ 5.3.3 classes (rocketmq-remoting / rocketmq-common).
 * Every input is fixed (no clock, no randomness, explicit opaque/version), so the output is reproducible.
 * Writes one <name>.hex file per vector into the directory given as the first argument.
 * See tests/interop/vectors/README.md for the exact command.
 */
import java.io.File;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;

import com.alibaba.fastjson.serializer.SerializerFeature;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.*;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.remoting.protocol.*;
import org.apache.rocketmq.remoting.protocol.admin.ConsumeStats;
import org.apache.rocketmq.remoting.protocol.admin.OffsetWrapper;
import org.apache.rocketmq.remoting.protocol.body.ResetOffsetBody;
import org.apache.rocketmq.remoting.protocol.header.*;
import org.apache.rocketmq.remoting.protocol.heartbeat.*;
import org.apache.rocketmq.remoting.protocol.route.*;

public class CaptureVectors {
    static final String VERSION = "5.3.3";
    static final String DATE = System.getProperty("capture.date", "unknown");
    static File outDir;

    static void write(String name, String method, String note, byte[] data) throws Exception {
        try (PrintWriter w = new PrintWriter(new File(outDir, name + ".hex"), "UTF-8")) {
            w.println("# provenance: apache/rocketmq " + VERSION + " " + method
                + ", captured by tests/interop/vectors/CaptureVectors.java on " + DATE);
            for (String line : note.split("\n")) w.println("# " + line);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < data.length; i++) {
                sb.append(String.format("%02x", data[i] & 0xff));
                if (i % 32 == 31 || i == data.length - 1) { w.println(sb); sb.setLength(0); }
            }
        }
        System.out.println(name + " " + data.length);
    }

    static byte[] bytes(ByteBuffer b) { byte[] a = new byte[b.remaining()]; b.get(a); return a; }

    static RemotingCommand fix(RemotingCommand c, int opaque, SerializeType st) {
        c.setOpaque(opaque);
        c.setVersion(MQVersion.Version.V5_3_3.ordinal());
        c.setSerializeTypeCurrentRPC(st);
        return c;
    }

    static MessageExt record(String topic, int queueId, long queueOffset, long phyOffset, int sysFlag, byte[] body,
                             InetSocketAddress born, long bornTs, InetSocketAddress store, long storeTs,
                             Map<String, String> props, int flag, int reconsume, long prepared) {
        MessageExt m = new MessageExt();
        m.setTopic(topic); m.setQueueId(queueId); m.setQueueOffset(queueOffset); m.setCommitLogOffset(phyOffset);
        m.setSysFlag(sysFlag); m.setBody(body); m.setBornHost(born); m.setBornTimestamp(bornTs);
        m.setStoreHost(store); m.setStoreTimestamp(storeTs); m.setFlag(flag); m.setReconsumeTimes(reconsume);
        m.setPreparedTransactionOffset(prepared);
        for (Map.Entry<String, String> e : props.entrySet()) MessageAccessor.putProperty(m, e.getKey(), e.getValue());
        return m;
    }

    public static void main(String[] args) throws Exception {
        outDir = new File(args[0]);
        outDir.mkdirs();

        // ---------------------------------------------------------------- SEND_MESSAGE_V2 request
        SendMessageRequestHeader v1 = new SendMessageRequestHeader();
        v1.setProducerGroup("PG_golden"); v1.setTopic("GoldenTopic"); v1.setDefaultTopic("TBW102");
        v1.setDefaultTopicQueueNums(4); v1.setQueueId(2); v1.setSysFlag(0); v1.setBornTimestamp(1700000000000L);
        v1.setFlag(0); v1.setProperties("KEYS\u0001k1\u0002TAGS\u0001tagA\u0002UNIQ_KEY\u00017F00000100002A9F0000000000000001\u0002");
        v1.setReconsumeTimes(0); v1.setUnitMode(false); v1.setBatch(false);
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(v1);
        byte[] sendBody = "hello golden".getBytes(StandardCharsets.UTF_8);
        for (SerializeType st : SerializeType.values()) {
            RemotingCommand c = fix(RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, v2), 1001, st);
            c.setBody(sendBody);
            write("send_v2_request_" + st.name().toLowerCase(), "RemotingCommand.encode (" + st + ")",
                "SEND_MESSAGE_V2 (310), SendMessageRequestHeaderV2 a..m from producerGroup PG_golden, topic GoldenTopic,\n"
                + "queueId 2, bornTimestamp 1700000000000, opaque 1001, version V5_3_3, body 'hello golden'",
                bytes(c.encode()));
        }

        // ---------------------------------------------------------------- PULL_MESSAGE request
        PullMessageRequestHeader ph = new PullMessageRequestHeader();
        ph.setConsumerGroup("CG_golden"); ph.setTopic("GoldenTopic"); ph.setQueueId(1); ph.setQueueOffset(128L);
        ph.setMaxMsgNums(32); ph.setSysFlag(2); ph.setCommitOffset(100L); ph.setSuspendTimeoutMillis(15000L);
        ph.setSubscription("tagA || tagB"); ph.setSubVersion(1700000000000L); ph.setExpressionType("TAG");
        for (SerializeType st : SerializeType.values()) {
            RemotingCommand c = fix(RemotingCommand.createRequestCommand(RequestCode.PULL_MESSAGE, ph), 1002, st);
            write("pull_request_" + st.name().toLowerCase(), "RemotingCommand.encode (" + st + ")",
                "PULL_MESSAGE (11), PullMessageRequestHeader CG_golden/GoldenTopic q1 offset 128 max 32 sysFlag 2\n"
                + "commitOffset 100 suspend 15000 sub 'tagA || tagB' subVersion 1700000000000 TAG, opaque 1002", bytes(c.encode()));
        }

        // ---------------------------------------------------------------- SendMessageResponseHeader response
        for (SerializeType st : SerializeType.values()) {
            RemotingCommand r = RemotingCommand.createResponseCommand(SendMessageResponseHeader.class);
            SendMessageResponseHeader rh = (SendMessageResponseHeader) r.readCustomHeader();
            rh.setMsgId("0A00000500002A9F0000000000001000"); rh.setQueueId(2); rh.setQueueOffset(77L);
            rh.setTransactionId("7F00000100002A9F0000000000000001");
            r.setCode(ResponseCode.SUCCESS); r.setRemark("send ok: \u00e9\u4e2d \"quoted\"");
            fix(r, 1001, st);
            write("send_response_" + st.name().toLowerCase(), "RemotingCommand.encode (" + st + ")",
                "response to opaque 1001, code SUCCESS, remark with non-ASCII and quotes, SendMessageResponseHeader\n"
                + "msgId 0A00000500002A9F0000000000001000 queueId 2 queueOffset 77 transactionId", bytes(r.encode()));
        }

        // ---------------------------------------------------------------- stored records / pull body
        InetSocketAddress born4 = new InetSocketAddress(InetAddress.getByAddress(new byte[]{10, 0, 0, 5}), 52000);
        InetSocketAddress store4 = new InetSocketAddress(InetAddress.getByAddress(new byte[]{10, 0, 0, 1}), 10911);
        InetSocketAddress born6 = new InetSocketAddress(InetAddress.getByName("2001:db8::5"), 52001);
        InetSocketAddress store6 = new InetSocketAddress(InetAddress.getByName("fe80::1:2"), 10911);
        LinkedHashMap<String, String> p1 = new LinkedHashMap<>();
        p1.put("TAGS", "tagA"); p1.put("KEYS", "k1 k2"); p1.put("UNIQ_KEY", "7F00000100002A9F0000000000000001");
        p1.put("CONSUME_START_TIME", "1700000000500");
        byte[] body1 = "hello golden".getBytes(StandardCharsets.UTF_8);
        MessageExt m1 = record("GoldenTopic", 1, 128, 4096, 0, body1, born4, 1700000000000L, store4, 1700000000123L, p1, 0, 0, 0);
        m1.setBodyCRC(UtilAll.crc32(body1));
        byte[] r1 = MessageDecoder.encode(m1, false);

        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 64; i++) big.append("compressible golden body ").append(i % 4).append(' ');
        byte[] rawBody = big.toString().getBytes(StandardCharsets.UTF_8);
        int zflag = MessageSysFlag.COMPRESSED_FLAG | CompressionType.ZLIB.getCompressionFlag();
        byte[] zbody = CompressorFactory.getCompressor(CompressionType.ZLIB).compress(rawBody, 5);
        LinkedHashMap<String, String> p2 = new LinkedHashMap<>();
        p2.put("TAGS", "tagB"); p2.put("UNIQ_KEY", "7F00000100002A9F0000000000000002");
        MessageExt m2 = record("GoldenTopic", 1, 129, 4096 + r1.length, zflag, rawBody, born4, 1700000001000L, store4, 1700000001123L, p2, 7, 0, 0);
        m2.setBodyCRC(UtilAll.crc32(zbody));
        byte[] r2 = MessageDecoder.encode(m2, true);

        LinkedHashMap<String, String> p3 = new LinkedHashMap<>();
        p3.put("TAGS", "tag\u00e9"); p3.put("RETRY_TOPIC", "GoldenTopic"); p3.put("UNIQ_KEY", "7F00000100002A9F0000000000000003");
        byte[] body3 = "ipv6 \u4e2d\u6587".getBytes(StandardCharsets.UTF_8);
        int v6flags = MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG | MessageSysFlag.TRANSACTION_COMMIT_TYPE;
        MessageExt m3 = record("%RETRY%CG_golden", 0, 5, 4096 + r1.length + r2.length, v6flags, body3, born6, 1700000002000L,
            store6, 1700000002123L, p3, 0, 3, 2048);
        m3.setBodyCRC(UtilAll.crc32(body3));
        byte[] r3 = MessageDecoder.encode(m3, false);

        LinkedHashMap<String, String> p4 = new LinkedHashMap<>();
        p4.put("TAGS", "mixed");
        byte[] body4 = new byte[0];
        MessageExt m4 = record("GoldenTopic", 1, 130, 4096 + r1.length + r2.length + r3.length, MessageSysFlag.BORNHOST_V6_FLAG,
            body4, born6, 1700000003000L, store4, 1700000003123L, p4, 0, 0, 0);
        m4.setBodyCRC(UtilAll.crc32(body4));
        byte[] r4 = MessageDecoder.encode(m4, false);

        write("record_ipv4", "MessageDecoder.encode(MessageExt, false)",
            "GoldenTopic q1 queueOffset 128 commitLogOffset 4096 sysFlag 0 body 'hello golden'\n"
            + "born 10.0.0.5:52000 @1700000000000, store 10.0.0.1:10911 @1700000000123; properties TAGS,KEYS,UNIQ_KEY,CONSUME_START_TIME", r1);
        write("record_zlib", "MessageDecoder.encode(MessageExt, true)",
            "GoldenTopic q1 queueOffset 129 flag 7 sysFlag COMPRESSED|ZLIB (0x301); body = ZLIB level 5 of 64x"
            + " 'compressible golden body <i%4> '\nbodyCRC = crc32 of the compressed bytes", r2);
        write("record_ipv6", "MessageDecoder.encode(MessageExt, false)",
            "%RETRY%CG_golden q0 queueOffset 5 sysFlag BORNHOST_V6|STOREHOST_V6|TRANSACTION_COMMIT, reconsumeTimes 3,\n"
            + "preparedTransactionOffset 2048, born [2001:db8::5]:52001, store [fe80::1:2]:10911, UTF-8 body and tag", r3);
        ByteBuffer pull = ByteBuffer.allocate(r1.length + r2.length + r3.length + r4.length);
        pull.put(r1).put(r2).put(r3).put(r4);
        write("pull_body", "MessageDecoder.encode(MessageExt, needCompress) x4, concatenated",
            "the PULL_MESSAGE response body: record_ipv4 + record_zlib + record_ipv6 + a 4th record (empty body,\n"
            + "born IPv6 [2001:db8::5]:52001, store IPv4 10.0.0.1:10911, queueOffset 130)", pull.array());

        // pull response frame (binary header) carrying that body
        PullMessageResponseHeader prh = new PullMessageResponseHeader();
        RemotingCommand pr = RemotingCommand.createResponseCommand(PullMessageResponseHeader.class);
        PullMessageResponseHeader prh2 = (PullMessageResponseHeader) pr.readCustomHeader();
        prh2.setSuggestWhichBrokerId(0L); prh2.setNextBeginOffset(131L); prh2.setMinOffset(0L); prh2.setMaxOffset(131L);
        pr.setCode(ResponseCode.SUCCESS); pr.setBody(pull.array());
        fix(pr, 1002, SerializeType.ROCKETMQ);
        write("pull_response_rocketmq", "RemotingCommand.encode (ROCKETMQ)",
            "response to opaque 1002, SUCCESS, PullMessageResponseHeader suggestWhichBrokerId 0 nextBeginOffset 131\n"
            + "minOffset 0 maxOffset 131, body = pull_body", bytes(pr.encode()));

        // msg ids
        String id4 = MessageDecoder.createMessageId(store4, 4096L);
        String id6 = MessageDecoder.createMessageId(store6, 4096L + r1.length + r2.length);
        write("msg_ids", "MessageDecoder.createMessageId(SocketAddress, long)",
            "UTF-8 text: line 1 = id of 10.0.0.1:10911 @4096, line 2 = id of [fe80::1:2]:10911 @" + (4096L + r1.length + r2.length),
            (id4 + "\n" + id6 + "\n").getBytes(StandardCharsets.UTF_8));

        // properties string
        LinkedHashMap<String, String> pp = new LinkedHashMap<>();
        pp.put("KEYS", "k1 k2"); pp.put("TAGS", "tagA"); pp.put("WAIT", "true"); pp.put("DELAY", "3"); pp.put("uk", "\u4e2d=x");
        write("properties", "MessageDecoder.messageProperties2String(LinkedHashMap)",
            "KEYS=k1 k2, TAGS=tagA, WAIT=true, DELAY=3, uk=<U+4E2D>=x in that order", MessageDecoder.messageProperties2String(pp).getBytes(StandardCharsets.UTF_8));

        // ---------------------------------------------------------------- batch body
        List<Message> batch = new ArrayList<>();
        Message b1 = new Message("GoldenTopic", "tagA", "key1", "batch one".getBytes(StandardCharsets.UTF_8));
        b1.putUserProperty("u", "1");
        b1.getProperties().put("UNIQ_KEY", "7F00000100002A9F0000000000000011");
        Message b2 = new Message("GoldenTopic", "tagB", "key2", 5, "batch two \u4e2d".getBytes(StandardCharsets.UTF_8), true);
        b2.getProperties().put("UNIQ_KEY", "7F00000100002A9F0000000000000012");
        Message b3 = new Message("GoldenTopic", new byte[0]);
        batch.add(b1); batch.add(b2); batch.add(b3);
        StringBuilder props = new StringBuilder();
        for (Message m : batch) props.append(MessageDecoder.messageProperties2String(m.getProperties())).append(" | ");
        write("batch_body", "MessageDecoder.encodeMessages(List<Message>)",
            "3 messages (flag 0, 5, 0); property strings, HashMap order as Java emitted them:\n" + props.toString().replace('\u0001', '=').replace('\u0002', ';'),
            MessageDecoder.encodeMessages(batch));

        // ---------------------------------------------------------------- route data
        TopicRouteData rd = new TopicRouteData();
        rd.setOrderTopicConf(null);
        List<QueueData> qds = new ArrayList<>();
        QueueData qa = new QueueData(); qa.setBrokerName("broker-a"); qa.setReadQueueNums(4); qa.setWriteQueueNums(4); qa.setPerm(6); qa.setTopicSysFlag(0);
        QueueData qb = new QueueData(); qb.setBrokerName("broker-b"); qb.setReadQueueNums(8); qb.setWriteQueueNums(8); qb.setPerm(4); qb.setTopicSysFlag(1);
        qds.add(qa); qds.add(qb);
        rd.setQueueDatas(qds);
        List<BrokerData> bds = new ArrayList<>();
        HashMap<Long, String> addrsA = new HashMap<>(); addrsA.put(0L, "10.0.0.1:10911"); addrsA.put(1L, "10.0.0.2:10911");
        HashMap<Long, String> addrsB = new HashMap<>(); addrsB.put(0L, "[fe80::1:2]:10911");
        bds.add(new BrokerData("DefaultCluster", "broker-a", addrsA));
        BrokerData bb = new BrokerData("DefaultCluster", "broker-b", addrsB); bb.setEnableActingMaster(true);
        bds.add(bb);
        rd.setBrokerDatas(bds);
        rd.setFilterServerTable(new HashMap<>());
        write("route_fastjson", "TopicRouteData.encode()",
            "fastjson default form (non-standard unquoted Long keys in brokerAddrs); 2 queue datas, broker-a {0,1}, broker-b {0 IPv6}", rd.encode());
        write("route_standard", "TopicRouteData.encode(BrowserCompatible, QuoteFieldNames, SkipTransientField, MapSortField)",
            "the form ClientRequestProcessor.getRouteInfoByTopic returns to clients with version >= V4_9_4 (or acceptStandardJsonOnly)",
            rd.encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
                SerializerFeature.SkipTransientField, SerializerFeature.MapSortField));

        // ---------------------------------------------------------------- MessageQueue-keyed maps
        ConsumeStats cs = new ConsumeStats();
        HashMap<MessageQueue, OffsetWrapper> ot = new HashMap<>();
        OffsetWrapper o1 = new OffsetWrapper(); o1.setBrokerOffset(100); o1.setConsumerOffset(90); o1.setPullOffset(95); o1.setLastTimestamp(1700000000000L);
        OffsetWrapper o2 = new OffsetWrapper(); o2.setBrokerOffset(7); o2.setConsumerOffset(7); o2.setPullOffset(7); o2.setLastTimestamp(0);
        ot.put(new MessageQueue("GoldenTopic", "broker-a", 0), o1);
        ot.put(new MessageQueue("GoldenTopic", "broker-b", 3), o2);
        cs.setOffsetTable(ot); cs.setConsumeTps(12.5);
        write("consume_stats", "ConsumeStats.encode()",
            "fastjson with MessageQueue object keys; broker-a/0 {100,90,95,1700000000000}, broker-b/3 {7,7,7,0}, consumeTps 12.5", cs.encode());
        ResetOffsetBody rb = new ResetOffsetBody();
        HashMap<MessageQueue, Long> rt = new HashMap<>();
        rt.put(new MessageQueue("GoldenTopic", "broker-a", 0), 42L);
        rt.put(new MessageQueue("GoldenTopic", "broker-a", 1), 0L);
        rb.setOffsetTable(rt);
        write("reset_offset_body", "ResetOffsetBody.encode()", "broker-a/0 -> 42, broker-a/1 -> 0", rb.encode());

        // ---------------------------------------------------------------- heartbeat
        HeartbeatData hb = new HeartbeatData();
        hb.setClientID("10.0.0.5@golden#1");
        ProducerData pd = new ProducerData(); pd.setGroupName("PG_golden");
        hb.getProducerDataSet().add(pd);
        ConsumerData cd = new ConsumerData();
        cd.setGroupName("CG_golden"); cd.setConsumeType(org.apache.rocketmq.remoting.protocol.heartbeat.ConsumeType.CONSUME_PASSIVELY);
        cd.setMessageModel(MessageModel.CLUSTERING); cd.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        cd.setUnitMode(false);
        SubscriptionData sd = new SubscriptionData("GoldenTopic", "tagA || tagB");
        sd.setSubVersion(1700000000000L); sd.setExpressionType("TAG");
        sd.getTagsSet().add("tagA"); sd.getTagsSet().add("tagB");
        sd.getCodeSet().add("tagA".hashCode()); sd.getCodeSet().add("tagB".hashCode());
        cd.getSubscriptionDataSet().add(sd);
        hb.getConsumerDataSet().add(cd);
        hb.setHeartbeatFingerprint(0);
        write("heartbeat", "HeartbeatData.encode()",
            "clientID 10.0.0.5@golden#1, producer PG_golden, consumer CG_golden PUSH CLUSTERING LAST_OFFSET,\n"
            + "subscription GoldenTopic 'tagA || tagB' subVersion 1700000000000", hb.encode());
    }
}
