"""Everything askgate itself says to a human, in en / tr / hi."""

from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "en": {
        "submitted": "Answer submitted.",
        "already_answered": "This question was already answered.",
        "expired": "This question has expired.",
        "ended": "This question has ended.",
        "not_allowed": "You are not allowed to answer this question.",
        "other": "Other…",
        "other_prompt": "Type your answer:",
        "skip": "Skip",
        "done": "Done",
        "submit": "Submit",
        "back": "Back",
        "next": "Next",
        "collapse": "Collapse",
        "expand": "Show question",
        "time_left": "Time left",
        "of": "{n} of {total}",
        "choose_many": "(choose one or more)",
        "answered": "Answered: {labels}",
        "summary_timeout": "Expired",
        "summary_cancelled": "Cancelled",
        "summary_run_aborted": "Cancelled",
        "summary_skipped": "Skipped",
        "summary_delivery_failed": "Not delivered",
        "guide_single": "Reply with an option's number or your own answer, or 'skip'.",
        "guide_multi": "Reply with one or more numbers separated by commas (e.g. 1,3) "
        "or your own answer, or 'skip'.",
        "guide_many": "Reply with one line per question, in order, or 'key: answer' "
        "lines; 'skip' skips all.",
        "missing": "Please also answer: {questions}",
        "too_many_lines": "Please reply with one line per question ({count} questions).",
        "free_text": "(your answer)",
        "no_pending": "There is no question waiting for an answer.",
        "link_invalid": "This link is invalid or has expired. Ask the agent for a new one.",
        "timeline_empty": "No questions yet.",
        "composer": "Type a reply…",
        "send": "Send",
        "pick_missing": "Answer this question first.",
        "select_then_done": "Tap the options to select them, then Done.",
        "waiting": "Waiting for your answer",
        "recommended": "Recommended",
        "timeline_title": "Questions from your agent",
        "panel_title": "Your agent asks",
        "question_bar": "Open the question",
        "reconnecting": "Reconnecting…",
        "choose": "Choose…",
        "choose_then_submit": "Choose an answer for each question, then Submit.",
        # Chat channels (Telegram): the prompt's footer, /start and /help, and the note for
        # a plain message when more than one question waits in the chat.
        "minutes_short": "{n} min",
        "seconds_short": "{n} s",
        "open_web": "Open on the web",
        "group_reply": "In a group the bot sees only replies: to answer in writing, reply to "
        "this message.",
        "help_intro": "askgate shows your agent's questions in this chat.",
        "help_chat_id": "This chat's id:",
        "help_target": "Ask with this target:",
        "help_answer": "Answer with the buttons, or reply to the question's message in your "
        "own words.",
        "help_group": "In a group the bot sees only replies to its messages and commands, "
        "so reply to the question.",
        "help_commands": "/pending shows the waiting question again; /skip skips it.",
        "which": "More than one question is waiting here. Reply to the message of the one "
        "you are answering:",
        "which_again": "/pending shows them again.",
        "cmd_help": "This chat's id and how to answer",
        "cmd_pending": "Show the waiting question again",
        "cmd_skip": "Skip the waiting question",
        "cancel": "Cancel",
        "or_reply_in_thread": "Or reply in this message's thread.",
        "reminder": "Still waiting for your answer — {left} left.",
        "final_warning": "Last call: this question expires in {left}.",
        "late_expired": "This question has expired; your answer was recorded but the agent "
        "went on without it.",
        "late_ended": "This question has ended; your answer was recorded but the agent went "
        "on without it.",
    },
    "tr": {
        "submitted": "Cevap gönderildi.",
        "already_answered": "Bu soru zaten cevaplandı.",
        "expired": "Bu sorunun süresi doldu.",
        "ended": "Bu soru sona erdi.",
        "not_allowed": "Bu soruyu cevaplama izniniz yok.",
        "other": "Diğer…",
        "other_prompt": "Cevabınızı yazın:",
        "skip": "Atla",
        "done": "Tamam",
        "submit": "Gönder",
        "back": "Geri",
        "next": "İleri",
        "collapse": "Küçült",
        "expand": "Soruyu göster",
        "time_left": "Kalan süre",
        "of": "{n} / {total}",
        "choose_many": "(bir veya daha fazlasını seçin)",
        "answered": "Cevaplandı: {labels}",
        "summary_timeout": "Süresi doldu",
        "summary_cancelled": "İptal edildi",
        "summary_run_aborted": "İptal edildi",
        "summary_skipped": "Atlandı",
        "summary_delivery_failed": "İletilemedi",
        "guide_single": "Bir seçeneğin numarasını ya da kendi cevabınızı yazın; "
        "geçmek için 'atla' yazın.",
        "guide_multi": "Virgülle ayrılmış bir veya daha fazla numara (ör. 1,3) ya da kendi "
        "cevabınızı yazın; geçmek için 'atla' yazın.",
        "guide_many": "Her soru için sırayla bir satır ya da 'anahtar: cevap' satırları "
        "yazın; 'atla' hepsini geçer.",
        "missing": "Lütfen şunu da cevaplayın: {questions}",
        "too_many_lines": "Lütfen her soru için bir satır yazın ({count} soru).",
        "free_text": "(kendi cevabınız)",
        "no_pending": "Cevap bekleyen bir soru yok.",
        "link_invalid": "Bu bağlantı geçersiz ya da süresi dolmuş. Ajandan yeni bir bağlantı "
        "isteyin.",
        "timeline_empty": "Henüz soru yok.",
        "composer": "Bir cevap yazın…",
        "send": "Gönder",
        "pick_missing": "Önce bu soruyu cevaplayın.",
        "select_then_done": "Seçmek için seçeneklere dokunun, sonra Tamam'a basın.",
        "waiting": "Cevabınız bekleniyor",
        "recommended": "Önerilen",
        "timeline_title": "Ajanınızdan gelen sorular",
        "panel_title": "Ajanınız soruyor",
        "question_bar": "Soruyu aç",
        "reconnecting": "Yeniden bağlanılıyor…",
        "choose": "Seçin…",
        "choose_then_submit": "Her soru için bir cevap seçin, sonra Gönder'e basın.",
        "minutes_short": "{n} dk",
        "seconds_short": "{n} sn",
        "open_web": "Web'de aç",
        "group_reply": "Grupta bot yalnızca yanıtları görür: yazarak cevaplamak için bu "
        "mesajı yanıtlayın.",
        "help_intro": "askgate, ajanınızın sorularını bu sohbette gösterir.",
        "help_chat_id": "Bu sohbetin kimliği:",
        "help_target": "Şu hedefle sorun:",
        "help_answer": "Düğmelerle cevaplayın ya da sorunun mesajını kendi sözlerinizle "
        "yanıtlayın.",
        "help_group": "Grupta bot yalnızca kendi mesajlarına verilen yanıtları ve komutları "
        "görür; bu yüzden soruyu yanıtlayın.",
        "help_commands": "/pending bekleyen soruyu yeniden gösterir; /skip onu atlar.",
        "which": "Burada birden fazla soru bekliyor. Cevapladığınız sorunun mesajını "
        "yanıtlayın:",
        "which_again": "/pending onları yeniden gösterir.",
        "cmd_help": "Bu sohbetin kimliği ve nasıl cevaplanır",
        "cmd_pending": "Bekleyen soruyu yeniden göster",
        "cmd_skip": "Bekleyen soruyu atla",
        "cancel": "Vazgeç",
        "or_reply_in_thread": "Ya da bu mesajın yanıt dizisinde (thread) cevap yazın.",
        "reminder": "Hâlâ cevabınızı bekliyoruz — {left} kaldı.",
        "final_warning": "Son çağrı: bu sorunun süresi {left} içinde doluyor.",
        "late_expired": "Bu sorunun süresi doldu; cevabınız kaydedildi ama ajan onsuz devam "
        "etti.",
        "late_ended": "Bu soru sona erdi; cevabınız kaydedildi ama ajan onsuz devam etti.",
    },
    "hi": {
        "submitted": "उत्तर भेज दिया गया।",
        "already_answered": "इस प्रश्न का उत्तर पहले ही दिया जा चुका है।",
        "expired": "इस प्रश्न का समय समाप्त हो गया है।",
        "ended": "यह प्रश्न समाप्त हो गया है।",
        "not_allowed": "आपको इस प्रश्न का उत्तर देने की अनुमति नहीं है।",
        "other": "अन्य…",
        "other_prompt": "अपना उत्तर लिखें:",
        "skip": "छोड़ें",
        "done": "हो गया",
        "submit": "भेजें",
        "back": "पीछे",
        "next": "आगे",
        "collapse": "छोटा करें",
        "expand": "प्रश्न दिखाएँ",
        "time_left": "शेष समय",
        "of": "{total} में से {n}",
        "choose_many": "(एक या अधिक चुनें)",
        "answered": "उत्तर दिया गया: {labels}",
        "summary_timeout": "समय समाप्त",
        "summary_cancelled": "रद्द किया गया",
        "summary_run_aborted": "रद्द किया गया",
        "summary_skipped": "छोड़ दिया गया",
        "summary_delivery_failed": "पहुँचाया नहीं जा सका",
        "guide_single": "किसी विकल्प की संख्या या अपना उत्तर लिखें; छोड़ने के लिए 'छोड़ें' लिखें।",
        "guide_multi": "अल्पविराम से अलग एक या अधिक संख्याएँ (जैसे 1,3) या अपना उत्तर लिखें; "
        "छोड़ने के लिए 'छोड़ें' लिखें।",
        "guide_many": "हर प्रश्न के लिए क्रम से एक पंक्ति या 'कुंजी: उत्तर' पंक्तियाँ लिखें; "
        "'छोड़ें' सब छोड़ देता है।",
        "missing": "कृपया इसका भी उत्तर दें: {questions}",
        "too_many_lines": "कृपया हर प्रश्न के लिए एक पंक्ति लिखें ({count} प्रश्न)।",
        "free_text": "(आपका उत्तर)",
        "no_pending": "कोई प्रश्न उत्तर की प्रतीक्षा में नहीं है।",
        "link_invalid": "यह लिंक अमान्य है या इसकी अवधि समाप्त हो गई है। एजेंट से नया लिंक माँगें।",
        "timeline_empty": "अभी कोई प्रश्न नहीं।",
        "composer": "उत्तर लिखें…",
        "send": "भेजें",
        "pick_missing": "पहले इस प्रश्न का उत्तर दें।",
        "select_then_done": "चुनने के लिए विकल्पों पर टैप करें, फिर 'हो गया' दबाएँ।",
        "waiting": "आपके उत्तर की प्रतीक्षा है",
        "recommended": "अनुशंसित",
        "timeline_title": "आपके एजेंट के प्रश्न",
        "panel_title": "आपका एजेंट पूछ रहा है",
        "question_bar": "प्रश्न खोलें",
        "reconnecting": "फिर से जुड़ रहा है…",
        "choose": "चुनें…",
        "choose_then_submit": "हर प्रश्न के लिए एक उत्तर चुनें, फिर 'भेजें' दबाएँ।",
        "minutes_short": "{n} मिनट",
        "seconds_short": "{n} सेकंड",
        "open_web": "वेब पर खोलें",
        "group_reply": "समूह में बॉट केवल जवाब देखता है: लिखकर उत्तर देने के लिए इस संदेश "
        "का जवाब दें।",
        "help_intro": "askgate आपके एजेंट के प्रश्न इस चैट में दिखाता है।",
        "help_chat_id": "इस चैट की आईडी:",
        "help_target": "इस लक्ष्य के साथ पूछें:",
        "help_answer": "बटन से उत्तर दें, या प्रश्न के संदेश का अपने शब्दों में जवाब दें।",
        "help_group": "समूह में बॉट केवल अपने संदेशों के जवाब और कमांड देखता है, इसलिए "
        "प्रश्न का जवाब दें।",
        "help_commands": "/pending प्रतीक्षा में प्रश्न फिर से दिखाता है; /skip उसे छोड़ देता है।",
        "which": "यहाँ एक से अधिक प्रश्न प्रतीक्षा में हैं। जिस प्रश्न का उत्तर दे रहे हैं, "
        "उसके संदेश का जवाब दें:",
        "which_again": "/pending उन्हें फिर से दिखाता है।",
        "cmd_help": "इस चैट की आईडी और उत्तर कैसे दें",
        "cmd_pending": "प्रतीक्षा में प्रश्न फिर से दिखाएँ",
        "cmd_skip": "प्रतीक्षा में प्रश्न छोड़ें",
        "cancel": "रद्द करें",
        "or_reply_in_thread": "या इस संदेश के थ्रेड में उत्तर लिखें।",
        "reminder": "अभी भी आपके उत्तर की प्रतीक्षा है — {left} शेष।",
        "final_warning": "अंतिम सूचना: यह प्रश्न {left} में समाप्त हो जाएगा।",
        "late_expired": "इस प्रश्न का समय समाप्त हो गया है; आपका उत्तर दर्ज कर लिया गया, पर "
        "एजेंट इसके बिना आगे बढ़ गया।",
        "late_ended": "यह प्रश्न समाप्त हो गया है; आपका उत्तर दर्ज कर लिया गया, पर एजेंट इसके "
        "बिना आगे बढ़ गया।",
    },
}

# Words that skip the whole ask, in every locale (a Turkish user may still type "skip").
# Compared after NFC normalisation.
SKIP_WORDS: Final[frozenset[str]] = frozenset({"skip", "atla", "छोड़ें", "/skip"})


def t(locale: str, key: str, **kwargs: object) -> str:
    table = MESSAGES.get(locale, MESSAGES["en"])
    text = table.get(key) or MESSAGES["en"][key]
    return text.format(**kwargs) if kwargs else text


def locale_of(language_code: str | None) -> str:
    """askgate's locale for a platform's language tag (`tr`, `hi-IN`, `pt-BR`): its
    language when askgate speaks it, else en."""
    lang = (language_code or "").split("-")[0].split("_")[0].lower()
    return lang if lang in MESSAGES else "en"
