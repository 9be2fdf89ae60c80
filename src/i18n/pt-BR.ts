/**
 * Frases em português do Brasil, com as mesmas chaves de ./en.ts (o tipo exige todas). `{nome}` é um valor a
 * inserir; os valores citados da entrada já chegam entre aspas. Códigos e status não se traduzem: os ERPs os leem.
 */
import type { Catalogue } from './index.js';

type P = Readonly<Record<string, string | undefined>>;
const paren = (v: string | undefined) => (v ? ` (${v})` : '');
const plural = (n: string | undefined, one: string, many: string) => `${n} ${n === '1' ? one : many}`;
/**
 * A status code inside a sentence a person reads: named in Portuguese with the code beside (`em execução (running)`),
 * since the codes are what ERPs and `status` show (README, Language) and the person must recognise them; a code not
 * known here reads as itself.
 */
const said = (words: Readonly<Record<string, string>>, code: string | undefined) =>
  code !== undefined && words[code] ? `${words[code]} (${code})` : (code ?? '?');
/** A batch's status in the store (src/store/approvals.ts), as a sentence says it of a lote. */
const BATCH_STATUS: Readonly<Record<string, string>> = {
  ingesting: 'sendo lido',
  ready: 'pronto para envio',
  running: 'em execução',
  done: 'concluído',
  rejected: 'rejeitado',
  awaiting_approval: 'aguardando aprovação',
  gone: 'inexistente',
};
/** A row's state (src/store/rows.ts), as a sentence says it of a linha. */
const ROW_STATE: Readonly<Record<string, string>> = {
  pending: 'pendente',
  in_flight: 'em envio',
  waiting: 'aguardando',
  succeeded: 'bem-sucedida',
  failed: 'com falha',
  rejected: 'rejeitada',
  duplicate: 'duplicada',
  uncertain: 'incerta',
};

export const PT_BR: Catalogue = {
  REQUIRED: (p: P) => `Esperava um valor${paren(p.when)}, veio uma célula vazia`,
  NOT_ALLOWED: 'Esperava uma célula vazia ({why}), veio {got}',
  INVALID_TEXT: 'Esperava texto sem caracteres de controle (tabulações, quebras de linha), veio {got}',
  'INVALID_TEXT.min': 'Esperava ao menos {min} caracteres, veio {got}',
  PATTERN: 'Esperava {expected}, veio {got}',
  TOO_LONG: 'Esperava no máximo {max} caracteres, veio {got}',
  INVALID_ENUM: 'Esperava um destes: {values}; veio {got}',
  INVALID_GUID: 'Esperava um GUID como 3f2504e0-4f89-41d3-9a0c-0305e82c3301, veio {got}',
  AMOUNT_NOT_POSITIVE: 'Esperava um valor maior que zero, veio {got}',
  'AMOUNT_NOT_POSITIVE.discount': 'Esperava um desconto maior que zero, veio {got}',
  AMOUNT_TOO_LARGE: (p: P) => `Esperava um valor de no máximo ${p.max}${paren(p.why)}, veio ${p.got}`,
  DATE_OUT_OF_RANGE: 'Esperava {what}, de {from} a {to}; veio {got}',
  INVALID_NUMBER: 'Esperava um número inteiro de {min} a {max}, veio {got}',
  INVALID_BOOLEAN: 'Esperava sim ou não (true/false), veio {got}',
  INVALID_STATE: 'Esperava a sigla de um estado (UF) com duas letras, como SP ou RJ, veio {got}',
  INVALID_ZIP_CODE: 'Esperava um CEP de 8 dígitos como 01310-100, veio {got}',
  'INVALID_ZIP_CODE.leadingZeros':
    'Esperava um CEP de 8 dígitos, veio {got} ({length} dígitos): o Excel apaga os zeros à esquerda; formate a coluna como Texto e digite {padded}',
  INVALID_EMAIL: 'Esperava um e-mail como ana@exemplo.com.br, veio {got}',
  INVALID_PHONE: 'Esperava um telefone com DDD como (11) 98765-4321 ou (11) 3333-4444, veio {got}',
  CONFLICT: 'Esperava só uma de duas colunas preenchida, vieram as duas',
  'CONFLICT.phone': 'Esperava o telefone em payer.phone ou em payer.phone.number, vieram os dois',
  'CONFLICT.phonePrefix': 'Esperava o DDD do telefone {phone}, veio {got}',
  'CONFLICT.header': 'Esperava {implied}, como diz o cabeçalho "{header}", veio {got}',
  NOTHING_TO_CHANGE: 'Esperava ao menos um valor a alterar além do correlationId, não veio nenhum',
  COLUMN_COUNT: 'Esperava {expected} células, como no cabeçalho, vieram {got}',
  UNNAMED_COLUMN: 'Esperava vazia a coluna {column}, que não tem cabeçalho (seu valor seria perdido), veio {got}',
  INVALID_ROW: 'Esperava uma linha válida, veio uma que não pôde ser lida',
  ROW_INVALID: 'A linha não pôde ser lida: {reason}',
  INVALID_DOCUMENT: 'Esperava um CPF (11 dígitos) ou um CNPJ (14 caracteres), vieram {length} caracteres',
  'INVALID_DOCUMENT.empty': 'Esperava um CPF (11 dígitos) ou um CNPJ (14 caracteres), veio um valor vazio',
  'INVALID_DOCUMENT.characters': 'Esperava só dígitos (e letras num CNPJ), veio {char}',
  'INVALID_DOCUMENT.cpfLetters': 'Esperava um CPF de 11 dígitos, vieram letras',
  'INVALID_DOCUMENT.cnpjLastDigits': 'Esperava que os 2 últimos caracteres do CNPJ fossem dígitos',
  'INVALID_DOCUMENT.onlyCpf': 'Esperava um CPF (11 dígitos), vieram {length} caracteres',
  'INVALID_DOCUMENT.onlyCnpj': 'Esperava um CNPJ (14 caracteres), vieram {length} caracteres',
  'INVALID_DOCUMENT.leadingZeros':
    'Esperava um {what} de {expected} dígitos, vieram {length} dígitos: o Excel apaga os zeros à esquerda; formate a coluna como Texto e digite o documento com os zeros ({padded})',
  INVALID_CPF: 'Esperava um CPF com dígitos verificadores válidos, os dígitos verificadores não conferem',
  INVALID_CNPJ: 'Esperava um CNPJ com dígitos verificadores válidos, os dígitos verificadores não conferem',

  INVALID_DATE: 'Esperava uma data como dd/mm/aaaa ou aaaa-mm-dd, veio {got}',
  'INVALID_DATE.serial':
    'Esperava uma data como dd/mm/aaaa, veio {got}: o Excel escreveu a data como número (numa planilha do Windows, {date}); formate a coluna como Data e salve a planilha de novo',
  'INVALID_DATE.shortYear':
    'Esperava o ano com quatro dígitos (dd/mm/aaaa), veio {got}: caso seja {date}, escreva assim (no Excel, formate a coluna como Data com o ano de quatro dígitos)',
  'INVALID_DATE.withTime':
    'Esperava só a data (dd/mm/aaaa), veio {got}, com um horário: escreva {date} (no Excel, formate a coluna como Data, sem hora)',
  'INVALID_DATE.calendar': 'Esperava uma data que exista no calendário, veio {got}',
  'INVALID_DATE.iso': 'Esperava uma data como aaaa-mm-dd, veio {got}',
  'INVALID_DATE.time': 'Esperava um horário HH:mm entre 00:00 e 23:59, veio {got}',
  'INVALID_AMOUNT.empty': 'Esperava um valor como 1.234,56, veio um valor vazio',
  'INVALID_AMOUNT.sign': 'Esperava um valor sem sinal, veio {got}',
  'INVALID_AMOUNT.characters': 'Esperava só dígitos, ponto e vírgula, veio {char} em {got}',
  'INVALID_AMOUNT.edges': 'Esperava um valor que comece e termine com um dígito, veio {got}',
  'INVALID_AMOUNT.marks': 'Esperava um único separador decimal "{mark}", vieram mais em {got}',
  'INVALID_AMOUNT.markCount': 'Esperava um único separador decimal "{mark}", vieram {count} em {got}',
  'INVALID_AMOUNT.decimals': 'Esperava no máximo 2 casas decimais, vieram {count} em {got}',
  'INVALID_AMOUNT.grouping': 'Esperava os milhares agrupados de três em três com "{group}", veio {got}',
  'INVALID_AMOUNT.tooLarge': 'Esperava um valor abaixo de 10.000.000.000, veio {got}',
  AMBIGUOUS_AMOUNT:
    'Valor ambíguo {got}: "{mark}" seguido de 3 dígitos pode ser milhar ou decimal; escreva {whole} ou {decimal}',
  WITH_HINT: '{message} ({hint})',
  EXCEL_ERROR:
    'Esperava um valor, veio {got}, o erro de uma fórmula do Excel; corrija a fórmula (ou cole os valores) e salve a planilha de novo',
  'EXCEL_ERROR.scientific':
    'Esperava o número inteiro, veio {got}: o Excel o escreveu em notação científica e perdeu dígitos; formate a coluna como Texto e digite o número de novo',
  'HINT.decimalComma': 'use vírgula: 1.234,56',
  'HINT.decimalDot': 'use ponto: 1234.56',
  'INVALID_DATE.instant': 'Esperava um instante válido, veio uma data inválida',
  'MONEY.cents': 'Esperava um valor em centavos inteiros de 0 a {max}, veio {got}',
  'MONEY.finite': 'Esperava um valor finito, veio {got}',
  'MONEY.negative': 'Esperava um valor não negativo, veio {got}',
  'MONEY.decimals': 'Esperava um valor com no máximo 2 casas decimais, veio {got}',
  'MONEY.max': 'Esperava um valor de até {max}, veio {got}',
  'MONEY.percent': 'Esperava um percentual de 0 ou mais, veio {got}',
  'IDS.namespace': 'Esperava um GUID como espaço de nomes, veio {got}',
  'IDS.ispb': 'Esperava um ISPB de 8 dígitos, veio {got}',
  'IDS.seed': 'Esperava uma semente >= 0, veio {got}',
  'DIGITS.only': 'Esperava só dígitos em {what}, veio {char} na posição {position}',
  'DIGITS.count': 'Esperava {length} dígitos em {what}, vieram {count}',
  'DIGITS.checkDigit': 'Esperava o dígito verificador {expected} n{what}, veio {found}',
  'WHAT.bankCode': 'um código de banco',
  'WHAT.slipFreeField': 'um campo livre de boleto',
  'WHAT.slipBarCode': 'um código de barras de boleto',
  'WHAT.slipGeneralDv': 'o código de barras (posição 5)',
  'WHAT.slipLineGeneralDv': 'a linha digitável (posição 33, o dígito sozinho antes dos 14 de vencimento e valor)',
  'WHAT.slipLine': 'uma linha digitável de boleto',
  'WHAT.lineField': 'o campo {field} da linha digitável (posição {position})',
  'WHAT.agency': 'uma agência',
  'WHAT.wallet': 'uma carteira',
  'WHAT.freeFieldMiddle': 'a parte do meio do campo livre',
  'WHAT.ourNumber': 'um nosso número',
  'WHAT.companyId': 'uma identificação de empresa/órgão',
  'WHAT.taxFreeField': 'um campo livre de arrecadação',
  'WHAT.taxBarCode': 'um código de barras de conta/tributo',
  'WHAT.taxGeneralDv': 'o código de barras da conta/tributo (posição 4)',
  'WHAT.taxLine': 'uma linha digitável de conta/tributo',
  'WHAT.lineBlock': 'o bloco {block} da linha digitável (posição {position})',
  'BOLETO.dueDateTooEarly': 'Esperava um vencimento a partir de 03/07/2000, veio {got}',
  'BOLETO.factor': 'Esperava um fator de vencimento 0000 ou de 1000 a 9999, veio {got}',
  'BOLETO.factorWindow': 'Esperava um fator de vencimento que desse uma data entre {from} e {to}, veio {got}',
  'BOLETO.amount': 'Esperava um valor de boleto de 0 a {max} centavos inteiros, veio {got}',
  'BOLETO.currency': 'Esperava o código de moeda 9 na posição 4 do código de barras, veio {got}',
  'ARRECADACAO.segment': 'Esperava um segmento de 1 a 9, veio {got}',
  'ARRECADACAO.segmentAt': 'Esperava um segmento de 1 a 9 na posição 2, veio {got}',
  'ARRECADACAO.valueIdentifier': 'Esperava um identificador de valor 6, 7, 8 ou 9, veio {got}',
  'ARRECADACAO.valueIdentifierAt': 'Esperava um identificador de valor 6, 7, 8 ou 9 na posição 3, veio {got}',
  'ARRECADACAO.value': 'Esperava um valor de 0 a {max} (11 dígitos), veio {got}',
  'ARRECADACAO.product': 'Esperava que uma conta/tributo começasse com 8, veio {got}',
  'BRCODE.whole': 'BR Code',
  'BRCODE.field': (p: P) => `campo ${p.id}${paren(p.name)}`,
  'BRCODE.merchantName': 'nome do recebedor',
  'BRCODE.merchantCity': 'cidade do recebedor',
  'BRCODE.currency': 'moeda',
  'BRCODE.country': 'código do país',
  'BRCODE.category': 'código de categoria do estabelecimento',
  'BRCODE.additional': 'dados adicionais',
  'BRCODE.key': 'a chave Pix (26-01)',
  'BRCODE.url': 'a URL de localização (26-25)',
  'BRCODE.description': 'a descrição (26-02)',
  'BRCODE.tlvId': 'Esperava um identificador TLV de 2 dígitos, veio {got}',
  'BRCODE.tlvTooLong': 'Esperava no máximo 99 caracteres no campo {id}, vieram {count}',
  'BRCODE.tlvHead':
    'Esperava um identificador de 2 dígitos e um tamanho de 2 dígitos na posição {position} ({where}), veio {got}',
  'BRCODE.tlvShort': 'Esperava {length} caracteres no campo {id} ({where}), vieram {count}',
  'BRCODE.text': 'Esperava {what} com letras ou dígitos, veio {got}',
  'BRCODE.buildAmount': 'Esperava um valor de BR Code de 1 a {max} centavos inteiros, veio {got}',
  'BRCODE.buildKey': 'Esperava uma chave Pix de 1 a {max} caracteres, vieram {count}',
  'BRCODE.buildUrl': 'Esperava uma URL de localização de 1 a {max} caracteres visíveis, sem esquema, vieram {count}',
  'BRCODE.buildTxid': 'Esperava um txid dinâmico de 26 a 35 letras e dígitos, vieram {count}',
  'BRCODE.length': 'Esperava de {min} a {max} caracteres ({what}), vieram {count}',
  'BRCODE.amount': 'Esperava o campo 54 (valor) como "66.66", com no máximo {max} caracteres, veio {got}',
  'BRCODE.amountZero': 'Esperava o campo 54 (valor) maior que zero, veio {got}',
  'BRCODE.start':
    'Esperava que o BR Code começasse com o campo 00 = "01" (000201), veio {got}; confira se o código foi copiado inteiro',
  'BRCODE.crcField':
    'Esperava que o BR Code terminasse com o campo 63 = 4 dígitos hexadecimais maiúsculos (6304XXXX), veio {got}; confira se o código foi copiado inteiro',
  'BRCODE.crc': 'Esperava o CRC {expected}, veio {got}: o código foi alterado ou copiado pela metade',
  'BRCODE.twice': 'Esperava o campo {id} uma só vez, veio duas vezes',
  'BRCODE.crcLast': 'Esperava que o campo 63 (CRC) fosse o último, veio o campo {id} por último',
  'BRCODE.missing': 'Esperava o {field}, não veio',
  'BRCODE.fixed': 'Esperava o {field} = {expected}, veio {got}',
  'BRCODE.categoryDigits': 'Esperava o campo 52 (código de categoria do estabelecimento) com 4 dígitos, veio {got}',
  'BRCODE.initiation': 'Esperava o campo 01 (ponto de iniciação) "11" ou "12", veio {got}',
  'BRCODE.keyOrUrl': (p: P) =>
    `Esperava que o modelo Pix trouxesse só um de 01 (chave) ou 25 (URL de localização), ${p.both ? 'vieram os dois' : 'não veio nenhum'}`,
  'BRCODE.txidMissing': 'Esperava o campo 62-05 (txid), não veio',
  'BRCODE.txidStatic':
    'Esperava o campo 62-05 (txid) com {min} a {max} letras e dígitos ou "***" num código estático, vieram {count} caracteres',
  'BRCODE.txidDynamic':
    'Esperava o campo 62-05 (txid) com {min} a {max} letras e dígitos ou "***" num código dinâmico, vieram {count} caracteres',
  'BRCODE.template': 'Esperava um modelo de conta (26 a 51) com GUI {gui}, não veio',
  'INVALID_CHARACTERS.bill':
    'Esperava um código de barras ou linha digitável só com dígitos (espaços, pontos e hífens aceitos), veio {char} na posição {position}',
  'INVALID_LENGTH.bill':
    'Esperava um código de barras de 44 dígitos, uma linha digitável de boleto de 47 ou de conta/tributo de 48, vieram {count} dígitos',
  'INVALID_LENGTH.barCodeGotLine':
    'Esperava um código de barras de 44 dígitos, veio uma linha digitável de {count} dígitos (ponha-a em digitableLine)',
  'INVALID_LENGTH.lineGotBarCode':
    'Esperava uma linha digitável de 47 ou 48 dígitos, veio um código de barras de 44 dígitos (ponha-o em barCode)',
  'INVALID_FIELD.taxLength': 'Esperava que a linha de conta/tributo (começa com 8) tivesse 48 dígitos, vieram {count}',
  'INVALID_FIELD.taxStart':
    'Esperava que uma linha de 48 dígitos fosse de conta/tributo, começando com 8, veio {first}',

  'WHEN.slip': 'quando o tipo é BANKSLIP ou BANKSLIP_PIX',
  'WHEN.with': 'junto com {column}',
  'WHEN.typeIs': 'quando o tipo é {type}',
  'WHEN.anyFilled': 'quando alguma coluna {prefix} está preenchida',
  'WHEN.anyDiscountItem': 'quando algum item de desconto está preenchido',
  'WHEN.filled': 'quando {column} está preenchido',
  'WHY.pixOnly': 'só para cobranças Pix',
  'WHY.slipOnly': 'só para boletos',
  'WHY.notPixStatic': 'não vale para PIX_STATIC',
  'WHY.bankslipPixOurNumber': 'um BANKSLIP_PIX é emitido na carteira 112: o banco atribui o nosso número',
  'WHY.slipMax': 'o máximo que um boleto comporta',
  'WHAT.dueDate': 'um vencimento de hoje a 10 anos à frente (o banco recusa outros)',
  'EXPECT.correlationId': '1 a 100 letras, dígitos ou . _ ~ : - (vai em caminhos de URL)',
  'EXPECT.ourNumber': '1 a 11 dígitos (cobrança expressa)',
  'EXPECT.areaCode': 'um DDD de 2 dígitos (11 a 99, sem terminar em 0)',
  'EXPECT.phoneNumber': 'um telefone de 8 dígitos (fixo, começando de 2 a 5) ou 9 dígitos (celular, começando com 9)',
  'EXPECT.email': 'um e-mail como ana@exemplo.com.br',

  'REQUIRED.billOneOf':
    'Esperava o código de barras (barCode) ou a linha digitável (digitableLine), vieram os dois vazios',
  'CONFLICT.otherBill':
    'Esperava a linha digitável do código de barras em barCode, veio a linha de outra conta (código de barras {barCode})',
  'DATE_OUT_OF_RANGE.payAt': 'Esperava payAt a partir de hoje ({today}) (o banco recusa data passada), veio {got}',
  'EXPECT.accountNumber': 'um número de conta de até 20 dígitos (dígito verificador depois de um hífen aceito)',
  'EXPECT.branch': 'um número de agência de até 5 dígitos',
  'EXPECT.phoneKey': 'uma chave de celular +55 + DDD + 9 dígitos, como +5511987654321',
  'CONFLICT.claimDocument': 'Esperava vazio ou o documento do titular {document}, veio {got}',
  AMOUNT_MISMATCH:
    'Esperava o próprio valor do QR code, {amount} (um código estático com valor não aceita outro), veio {got}',
  BANK_BILL_NOT_PAYABLE:
    'Esperava um boleto em aberto, a pagar (PENDING_PAYMENT); a consulta ao banco diz {status}: nada foi enviado',
  'BANK_AMOUNT_OUT_OF_RANGE.charged':
    'Esperava o valor cobrado do boleto, {charged} (este boleto não aceita pagamento parcial), veio {got}',
  'BANK_AMOUNT_OUT_OF_RANGE.range':
    'Esperava um valor de {min} a {max} (a faixa de pagamento parcial deste boleto), veio {got}',
  BANK_AMOUNT_NOT_WHOLE_CENTS: 'Esperava um número inteiro de centavos maior que 0, veio {got}',
  BANK_PIX_AMOUNT_FIXED: 'Esperava o valor do próprio QR code, {amount} (ele não aceita outro valor), veio {got}',
  BANK_PIX_AMOUNT_REQUIRED: 'Esperava um valor na linha: o QR code não traz valor',
  'INVALID_PIX_KEY.leadingZeros':
    'Esperava uma chave Pix, veio {got}: um {what} sem os zeros à esquerda ({expected} dígitos); o Excel os apaga: formate a coluna como Texto e digite a chave com os zeros ({padded})',
  INVALID_PIX_KEY: 'Esperava uma chave Pix: CPF, CNPJ, telefone +55, e-mail ou chave aleatória (EVP), veio {got}',
  'WHY.dynamicOnly': 'só para PIX_DYNAMIC',
  'WHY.staticOnly': 'só para PIX_STATIC',
  'WHEN.guidForDynamic': 'um GUID, para PIX_DYNAMIC',
  'WHERE.column': 'coluna {index} ({source} -> {column})',
  'WHERE.columnSame': 'coluna {index} ({column})',
  'WHERE.columnAbsent': 'coluna {column}',
  'WHERE.line': '{file} linha {line}',
  EXCERPT: '{text} ({length} caracteres)',

  LIMIT_PER_ROW: 'Esperava no máximo {max} ({setting}, {brl}), veio {got}',
  DUPLICATE_NATURAL_KEY: 'Mesma chave de negócio ({kind}) da linha {line} deste arquivo: não foi enviada de novo',
  'DUPLICATE_NATURAL_KEY.answeredIn': ' (respondida em {answer})',
  'DUPLICATE_NATURAL_KEY.otherFile':
    'Mesma chave de negócio ({kind}) da linha {line} de {file}{answered}: não foi enviada de novo',
  IDEMPOTENCY_KEY_REUSED:
    'Não enviada: a chave de idempotência {key} já é a da linha {line} {where}, outra operação: o banco a recusaria, ou responderia com o resultado daquela. Dê a esta linha uma chave própria',
  NATURAL_KEY_REUSED:
    'Não enviada: {key} na {column} já identifica a linha {line} {where}{answered}, outra operação de {kind}: {differences}. Uma chave é uma só operação no banco: dê a esta linha um valor próprio',
  'NATURAL_KEY_REUSED.difference': '{column}: {theirs} na linha {line}, {ours} aqui',
  'NATURAL_KEY_REUSED.thisFile': 'deste arquivo',
  'NATURAL_KEY_REUSED.otherFile': 'de {file}',
  'NATURAL_KEY_REUSED.empty': '(vazio)',
  'ROW_INVALID.invalid': 'A linha é inválida',
  BATCH_HAS_INVALID_ROWS:
    'Não enviada: este arquivo de {kind} tem {count} linha(s) inválida(s), e um arquivo que movimenta dinheiro é enviado inteiro ou não é enviado',
  'BANK_NETWORK.connectTimeout': '{where}: não conectou ao banco a tempo ({reason})',
  'BANK_NETWORK.headersTimeout': '{where}: o banco não respondeu a tempo; o pedido pode ter sido processado',
  'BANK_NETWORK.bodyTimeout': '{where}: a resposta do banco parou no meio; o pedido pode ter sido processado',
  'BANK_NETWORK.unreachable': '{where}: não foi possível conectar ao banco ({reason}); nada foi enviado',
  'BANK_NETWORK.tls': '{where}: a conexão segura (TLS) com o banco falhou ({reason}); nada foi enviado',
  'BANK_NETWORK.dropped': '{where}: a conexão caiu sem resposta ({reason}); o pedido pode ter sido processado',
  'BANK_NETWORK.droppedNotSent': '{where}: a conexão caiu ({reason}); nada foi enviado',
  'BANK_ANSWER.refused': 'O banco recusou (HTTP {status}): {said}',
  'BANK_ANSWER.error': 'O banco respondeu com um erro (HTTP {status}): {said}',
  'BANK_ANSWER.noText': 'sem texto de erro',
  CHARGE_ID_TAKEN:
    'O banco já tem outra cobrança com o correlationId {id} (valor no banco / nesta linha: {differences}): esta não foi criada; use outro correlationId ou Seu número',
  'STEP_ERROR.internal': 'Erro interno ao processar a linha: {reason}',
  ROW_UNPARSABLE: 'A linha guardada não é mais válida: {errors}',
  STOPPED_BEFORE_SEND: 'Parado antes do envio da etapa {step}: nada foi enviado; enviada na próxima execução',
  STOPPED_OUTCOME_UNKNOWN: (p: P) =>
    `Parado quando o resultado da etapa ${p.step} era desconhecido${paren(p.reason)}; resolvido na próxima execução`,
  'UNKNOWN_OUTCOME.earlierRun': 'uma execução anterior parou no meio do pedido',
  'UNKNOWN_OUTCOME.unknown': 'resultado desconhecido',
  UNKNOWN_OUTCOME_NOT_RESENT:
    'A etapa {step} pode ter sido feita no banco ({reason}); nunca é reenviada às cegas: confira no banco',
  'UNKNOWN_OUTCOME.lookupFailed': 'A etapa {step} pode ter sido feita no banco, e a consulta falhou: {reason}',
  'RATE_LIMITED.waiting':
    'O banco respondeu 429 (requisições demais) {attempts} vezes; nada desta linha foi enviado: ela espera, e a próxima execução ou o daemon a envia',
  'RATE_LIMITED.stillLimited': 'Ainda limitado pelo banco (429) depois de {attempts} tentativas: {reason}',
  UNKNOWN_OUTCOME:
    'Etapa {step}: resultado desconhecido depois de {attempts} tentativa(s): {reason}; tentada de novo na próxima execução',
  'UNKNOWN_OUTCOME.notCompleted':
    'A etapa {step} não pôde ser concluída depois de {attempts} tentativa(s): {reason}; tentada de novo na próxima execução',
  'BANK_UNREACHABLE.waiting':
    'O banco não pôde ser alcançado ({reason}); nada desta linha foi enviado. Aguardando: vai quando o banco voltar (próxima tentativa em até {seconds} s)',
  'BANK_UNREACHABLE.otherRequest': 'outro pedido acabou de encontrá-lo fora do ar',
  'BANK_CREDENTIALS_REFUSED.waiting':
    'O banco recusou as credenciais do remessa ({reason}); nada desta linha foi feito. Confira a chave de API que o remessa envia (REMESSA_API_KEY, bank.apiKeyFile ou a credencial do systemd remessa-api-key): trocada, vencida ou sem acesso a isto. Aguardando: vai quando o banco aceitar as credenciais de novo (nova tentativa a cada {seconds} s, e na hora após um reload com credenciais novas)',
  'BANK_CREDENTIALS_REFUSED.run':
    'O banco recusou as credenciais do remessa ({reason}); nada desta linha foi feito. Confira a chave de API que o remessa envia (REMESSA_API_KEY, bank.apiKeyFile ou a credencial do systemd remessa-api-key): trocada, vencida ou sem acesso a isto. Aguardando: a próxima execução (ou o daemon) a envia quando o banco aceitar as credenciais de novo',
  'BANK_CREDENTIALS_REFUSED.otherRequest': 'outro pedido acabou de ser recusado assim',
  'UNKNOWN_OUTCOME.credentials':
    'Etapa {step}: resultado desconhecido ({reason}), e o banco recusa agora as credenciais do remessa: não dá para reenviá-la com a mesma chave nem consultá-la; tentada de novo na próxima execução, quando as credenciais forem aceitas',
  'UNKNOWN_OUTCOME.unreachable':
    'Etapa {step}: resultado desconhecido ({reason}), e o banco não pode ser alcançado agora para reenviá-la com a mesma chave; tentada de novo na próxima execução',
  'UNKNOWN_OUTCOME.earlierAttempt': 'uma tentativa anterior',
  'UNKNOWN_OUTCOME.itsOutcome': 'o resultado dela é desconhecido',
  'REFUSED.replayed':
    '{message} (o banco repetiu a primeira resposta a esta IdempotencyKey: a primeira tentativa também foi recusada, nada foi feito)',
  'REFUSED.evidence': '{message} ({evidence})',
  REFUSED_AFTER_UNKNOWN: (p: P) =>
    `Etapa ${p.step}: o banco recusou o reenvio (${p.code}: ${p.message}), mas uma tentativa anterior desta linha pode ter sido feita (${p.cause}) e explicaria essa recusa; por isso a linha não é marcada como falha.${p.evidence ? ` Evidência: ${p.evidence}.` : ''} Confira no banco (IdempotencyKey ${p.key}) antes de fazer à mão; tentada de novo na próxima execução.`,
  'EVIDENCE.lookedUpNotDone': 'consultado no banco: não foi feito',
  'EVIDENCE.lookedUpDone': 'consultado no banco: foi feito',
  'EVIDENCE.lookupFailed': 'a busca de evidência falhou: {reason}',
  'EVIDENCE.billReads': 'a conta {barCode} agora consta como {status}',
  'EVIDENCE.billNotPaid': '{bill}: nenhum pagamento dela foi feito',
  'EVIDENCE.billMaybePaid':
    '{bill}; a tentativa anterior desta linha pode ser o pagamento (o banco não oferece consulta de pagamento por IdempotencyKey): não pague de novo antes de conferir o extrato',
  'EVIDENCE.claimOpen': 'a reivindicação aberta {id} ({status}) da chave {key} nesta conta',
  'EVIDENCE.claimNone': 'nenhuma reivindicação aberta da chave {key} foi encontrada nesta conta',
  'EVIDENCE.noInitialization': 'nenhuma inicialização guardada para consultar',
  'EVIDENCE.pixPaid': 'o pagamento {id} foi feito com o endToEndId {e2e} desta linha',
  'EVIDENCE.pixNotPaid': 'nenhum pagamento foi feito com o endToEndId {e2e} desta linha',
  PIX_PAYMENT_NOT_LOOKED_UP:
    'Este pagamento Pix pode ter sido feito (a resposta do banco se perdeu), e o banco não soube dizer se existe um pagamento com o endToEndId {e2e} ({reason}). Ele não foi enviado de novo: não se sabe se o banco responde a um reenvio com a mesma IdempotencyKey ({key}) com o primeiro pagamento (configuração bank.pixPaymentKeyReplayed). Confira no extrato da conta o endToEndId {e2e} antes de pagar à mão; a próxima execução consulta de novo',
  'APPROVAL.perFile': 'o arquivo paga {amount}, acima de {setting} {limit}',
  'APPROVAL.perDay':
    '{used} de {kind} já foram liberados em {day} (America/Sao_Paulo): com os {amount} deste arquivo, passa de {setting} {limit}',
  'APPROVAL.required': 'approval.kinds inclui {kind}: todo arquivo desse tipo espera a aprovação de uma pessoa',
  'APPROVAL.notSent':
    'Não enviado: {reasons} (a aprovação está desligada para {kind}, então o arquivo é recusado inteiro)',
  'DUPLICATE.original': '{message} (original: {state})',
  'DUPLICATE.originalPaidNothing': '{message}, nada foi pago por esta linha (original: {state})',
  'DUPLICATE.notFinished': 'ainda não terminou',
  RESOLVED_AS_FAILED: 'Dado como falho por {by} em {at}: {note}',
  APPROVAL_REJECTED: (p: P) => `Rejeitado por ${p.by} em ${p.at}${p.note ? `: ${p.note}` : ''}; nada foi enviado`,
  'APPROVAL.notHeld': 'O lote {batch} ({file}) não aguarda aprovação',
  'APPROVAL.notAwaiting': (p: P) =>
    `O lote ${p.batch} (${p.file}) não aguarda aprovação: está ${said(BATCH_STATUS, p.status)}`,
  'APPROVAL.decidedAlready': (p: P) =>
    `O lote ${p.batch} (${p.file}) já foi ${said({ approved: 'aprovado', rejected: 'rejeitado' }, p.state)} por ${p.by} em ${p.at}`,
  'APPROVAL.beforePreview':
    'Lote {batch} ({file}): esperava uma decisão tomada depois da prévia ({preview}), veio uma de {made}: escreva o marcador de novo depois de ler a prévia',
  'APPROVAL.noName': 'Esperava o nome da pessoa que decide, não veio nenhum',
  'APPROVAL.noPreview':
    'O lote {batch} ({file}) ainda não tem prévia (seus boletos ainda estão sendo consultados): decida quando a prévia estiver na caixa de saída',
  'APPROVAL.owner':
    '{by} é dono do arquivo (quem o preparou) e approval.forbidSameAsOwner está ligado: outra pessoa deve aprová-lo',
  'APPROVAL.maker': '{by} consta em approval.makers (prepara arquivos): outra pessoa deve aprová-lo',
  'APPROVAL.markerEmpty':
    'Esperava em {marker} o nome de quem aprova na primeira linha (ex.: Maria Silva), veio {got}. Escreva-o de novo com o nome',
  'APPROVAL.markerEmpty.nothing': 'um arquivo vazio',
  'APPROVAL.markerEmpty.blanks': 'só espaços e linhas em branco',
  'APPROVAL.previewStale':
    'Aprovado por {by} em {at} sobre uma prévia que não mostrava {codes} (passado só depois dela): a aprovação foi anulada e nada foi enviado; decida de novo sobre esta prévia',
  'APPROVAL.markerAmbiguous':
    '{marker} serve para {count} arquivos que aguardam aprovação com esse nome, e não se sabe de qual prévia se trata: nenhum foi aprovado. Aprove o da prévia lida com remessa approve LOTE --by NOME (lotes: {batches})',
  'APPROVAL.markerRefused': '{marker} não aprovou {file}: nada foi enviado, o arquivo continua aguardando.',
  'APPROVAL.ownerUnknown':
    'Não se sabe quem enviou o arquivo (dono: {owner}) e approval.forbidSameAsOwner está ligado: sem isso não há como confirmar que quem aprova é outra pessoa, então ninguém pode aprová-lo. O dono só diz quem enviou quando o arquivo chega pela conta de quem o preparou: aparece nobody quando o serviço roda com PrivateUsers=true, e desconhecido quando o arquivo é da própria conta do remessa ou é um link. Rejeite-o (remessa reject) e peça que seja enviado de novo pela conta de quem o preparou, ou desligue approval.forbidSameAsOwner e conte com approval.makers e approval.markersFrom',
  'APPROVAL.approverUnknown.marker':
    'Não se sabe quem gravou {marker} (dono: {user}) e approval.forbidSameAsOwner está ligado: quem aprova é o usuário do sistema dono do marcador, não o nome escrito nele. Aprove com remessa approve LOTE --by NOME rodando com o seu próprio usuário do sistema',
  'APPROVAL.approverUnknown.command':
    'Não se sabe qual usuário do sistema roda este comando ({user}) e approval.forbidSameAsOwner está ligado: quem aprova é esse usuário, não o --by. Rode remessa approve com o seu próprio usuário do sistema',
  'APPROVAL.sameUser.marker':
    '{marker} foi gravado pelo usuário do sistema {user}, o mesmo que enviou o arquivo, e approval.forbidSameAsOwner está ligado: quem aprova é quem grava o marcador, não o nome escrito nele ({by}). Outra pessoa deve aprová-lo, com o seu próprio usuário',
  'APPROVAL.sameUser.command':
    'remessa approve rodou como o usuário do sistema {user}, o mesmo que enviou o arquivo, e approval.forbidSameAsOwner está ligado: quem aprova é quem roda o comando, não o --by ({by}). Outra pessoa deve aprová-lo, com o seu próprio usuário',
  'APPROVAL.markerFolder.owner':
    '{marker} não foi usado: a pasta {dir} é do usuário do sistema {owner}, que pode renomear qualquer arquivo nela e assim pôr o marcador de outro arquivo com este nome (quem o gravou continua sendo o dono). Um marcador só vale numa pasta do usuário do remessa (ou do root) com chmod +t: mude o dono da pasta, ou defina approval.markersFrom com uma pasta só dos aprovadores; ou aprove com remessa approve LOTE --by NOME',
  'APPROVAL.markerFolder.writable':
    '{marker} não foi usado: na pasta {dir} (permissões {mode}) outros usuários podem renomear um arquivo que não é deles, e assim pôr o marcador de outro arquivo com este nome (quem o gravou continua sendo o dono). Proteja a pasta com chmod +t {dir}, ou defina approval.markersFrom com uma pasta só dos aprovadores; ou aprove com remessa approve LOTE --by NOME',
  'APPROVAL.markerFolder.unreadable':
    '{marker} não foi usado: não foi possível ler as permissões da pasta {dir}, e sem elas não se sabe se outra pessoa pôs com este nome o marcador de outro arquivo. Aprove com remessa approve LOTE --by NOME',
  'APPROVAL.markerLate':
    '{marker} chegou depois da decisão sobre {file} e não foi usado: nada mudou. Foi movido para {archived}.',
  'APPROVAL.viaSudo': '{user}, por sudo como {as}',
  'APPROVAL.markerLink':
    '{marker} é um link (simbólico, ou um arquivo com mais de um nome): seu dono não diz quem o gravou, e ele não foi lido. Grave um arquivo comum com o seu nome',

  FILE_IS_LINK:
    '{file} é um link simbólico. O remessa nunca segue links na caixa de entrada: o destino não foi lido e nada foi enviado. Copie o próprio arquivo para a caixa de entrada em vez de criar um link.',
  FILE_IS_FOLDER:
    '{file} é uma pasta, não um arquivo: nada dentro dela foi lido e nada foi enviado. Coloque os arquivos CSV diretamente em inbox/<tipo>/.',
  FILE_NOT_REGULAR:
    '{file} é {what}, não um arquivo comum: não foi aberto e nada foi enviado. Deixe um arquivo CSV comum.',
  'ENTRY.fifo': 'um pipe nomeado (FIFO)',
  'ENTRY.socket': 'um socket',
  'ENTRY.device': 'um dispositivo',
  'ENTRY.other': 'outra coisa',
  FILE_UNREADABLE:
    'Não foi possível ler {file}: {why} ({code}). Nada foi enviado. Dê ao usuário com que o remessa roda permissão de leitura no arquivo e deixe-o de novo.',
  'FILE_UNREADABLE.denied': 'permissão negada',
  'FILE_UNREADABLE.system': 'erro do sistema',
  FILE_CUT_OFF:
    '{file} parece cortado: {what}, e o arquivo não muda há {seconds} s. Nada foi enviado. Se o envio foi interrompido, envie o arquivo inteiro de novo: com um nome temporário (nome.csv.tmp ou nome.csv.filepart) renomeado para nome.csv ao terminar, ou seguido de um marcador nome.csv.done.',
  FILE_CHANGED_WHILE_READ:
    'o arquivo mudou enquanto era lido (quem o gravava ainda não tinha terminado); nada foi enviado. Deixe-o de novo quando estiver completo',
  'UNFINISHED.empty': 'o arquivo está vazio',
  'UNFINISHED.openQuote': 'a linha {line} abre aspas que nunca fecham',
  'UNFINISHED.shortLine': 'a linha {line} tem {columns} das {headerColumns} colunas do cabeçalho e não termina',
  'UNFINISHED.noLineEnd': 'a linha {line} não termina (falta a quebra de linha)',
  'HEADER.problems': '{count} problemas no cabeçalho:',
  'HEADER.more': '... e mais {count}',
  'HEADER.at': 'coluna {column} ({header})',
  'HEADER.empty': 'um cabeçalho vazio',
  'LIST.or': ' ou ',
  'HEADER.otherKind':
    'Estes cabeçalhos são os de um lote de {kinds}, não de {kind}: o arquivo está na pasta errada. Coloque-o em {folders} (um mapping não resolve isto).',
  'HEADER.suggestion':
    'Para ler estes cabeçalhos, acrescente estes mappings ao arquivo de configuração (junto dos que já houver; um cabeçalho mapeado para "" é ignorado), confira cada um e recarregue (SIGHUP) ou reinicie:',
  HEADER_UNKNOWN_COLUMN:
    'Esperava um nome de coluna deste tipo de lote (veja docs/batches.md) ou um cabeçalho mapeado, veio {header}',
  'HEADER_UNKNOWN_COLUMN.nearest':
    'Esperava um nome de coluna deste tipo de lote (veja docs/batches.md) ou um cabeçalho mapeado, veio {header}; nome conhecido mais próximo: {nearest} ({column})',
  HEADER_DUPLICATE_COLUMN:
    'Esperava cada coluna uma só vez, veio {target} tanto na coluna {firstColumn} ({firstHeader}) quanto na coluna {column} ({header}); mapeie uma delas para "" para ignorá-la',
  HEADER_MISSING_COLUMN: 'Esperava a coluna obrigatória {target}, veio um cabeçalho sem ela',
  'HEADER_MISSING_COLUMN.example':
    'Esperava a coluna obrigatória {target} (por exemplo, um cabeçalho {example}), veio um cabeçalho sem ela',
  HEADER_BAD_MAPPING:
    'Esperava que o mapping nomeasse uma das colunas deste tipo de lote, veio {mapped} para o cabeçalho {header}',
  FILE_EMPTY: 'Esperava uma linha de cabeçalho e linhas de dados, veio um arquivo vazio',
  'FILE_EMPTY.blank': 'Esperava uma linha de cabeçalho e linhas de dados, vieram só linhas em branco',
  'FILE_EMPTY.noHeader': 'Esperava uma linha de cabeçalho, não veio nenhuma',
  FILE_NOT_TEXT: 'Esperava um arquivo de texto CSV, veio {reason}',
  FILE_NO_ROWS: 'Esperava ao menos uma linha de dados depois do cabeçalho, não veio nenhuma',
  FILE_ENCODING:
    'Esperava texto UTF-8 do começo ao fim (o arquivo é UTF-8), veio um byte que não é UTF-8 ({bytes}) na coluna {column} (byte {offset}); ler o arquivo de outro jeito mudaria os outros acentos: corrija esse byte e salve o arquivo como UTF-8, ou configure a codificação',
  FILE_MIXED_ENCODING:
    'Esperava uma só codificação (a maioria dos acentos é Windows-1252), vieram bytes que se leem como UTF-8 ({bytes}) na coluna {column} (byte {offset}); o arquivo mistura codificações, e nenhuma leitura dá todas as linhas como foram escritas: salve-o numa só codificação, ou configure a codificação',
  'FILE_MIXED_ENCODING.start':
    'Esperava uma só codificação (o começo do arquivo é Windows-1252), vieram bytes que se leem como UTF-8 ({bytes}) na coluna {column} (byte {offset}); o arquivo mistura codificações, e nenhuma leitura dá todas as linhas como foram escritas: salve-o numa só codificação, ou configure a codificação',
  CSV_SYNTAX:
    'Esperava um CSV bem formado (delimitador {delimiter}, campos entre aspas "), veio um registro que não pôde ser lido ({code})',
  'CSV_SYNTAX.quoteNotClosed':
    'Esperava que o valor entre aspas aberto na coluna {column} fechasse com aspas ("), veio o fim do arquivo: aspas abertas e nunca fechadas engolem as linhas seguintes',
  'CSV_SYNTAX.recordSize':
    'Esperava um registro de no máximo {max} caracteres, veio um maior: provavelmente aspas (") que nunca fecham e engolem as linhas seguintes',
  'NOT_TEXT.utf16le':
    'uma marca de ordem de bytes UTF-16/UTF-32 (salve a planilha como CSV UTF-8 ou CSV, não como Texto Unicode)',
  'NOT_TEXT.utf16be':
    'uma marca de ordem de bytes UTF-16 (salve a planilha como CSV UTF-8 ou CSV, não como Texto Unicode)',
  'NOT_TEXT.workbook': 'uma pasta de trabalho do Excel (.xlsx ou .xls): salve-a no Excel como CSV',
  'NOT_TEXT.binary': 'conteúdo binário (bytes NUL)',
  UNKNOWN_KIND: 'Esperava um tipo de lote conhecido, veio {got}',
  'UNKNOWN_KIND.folder': 'Esperava que a pasta da caixa de entrada fosse um tipo de lote ({kinds}), veio {got}',
  'UNKNOWN_KIND.name':
    'Esperava um arquivo numa pasta de tipo (inbox/<tipo>/) ou com nome <tipo>-*.csv ou <tipo>_*.csv, sendo o tipo um destes: {kinds}; veio {got}',
  'UNKNOWN_KIND.headerOf':
    '{said}. O cabeçalho pode ser lido como o de um lote de {kinds}: caso seja, coloque o arquivo em {folders}, ou dê a ele um nome que comece pelo tipo ({names})',
  'UNKNOWN_KIND.given': 'Esperava o arquivo numa pasta de tipo ou com nome <tipo>-*.csv (ou --kind), veio {got}',
  'REJECTED.header': '{file} não foi processado: nada foi enviado ao banco.',
  'VALIDATE.summary': (p: P) =>
    `${p.file}: ${plural(p.rows, 'linha', 'linhas')}, ${plural(p.valid, 'válida', 'válidas')}, ${plural(p.invalid, 'inválida', 'inválidas')}, ${plural(p.errors, 'erro', 'erros')}${p.policy ? `; ${p.policy}` : ''}`,
  'VALIDATE.amounts': 'valores: {valid} válidos, {invalid} inválidos',
  'VALIDATE.allOrNothing': 'política all-or-nothing: nada seria enviado',
  'VALIDATE.sendValid': (p: P) =>
    `política send-valid: ${p.valid === '1' ? '1 linha válida seria enviada' : `${p.valid} linhas válidas seriam enviadas`}`,
  'VALIDATE.duplicate':
    'Mesma chave de negócio ({kind}) da linha {line} deste arquivo: não seria enviada de novo (a execução a responde como duplicate, com o resultado da linha {line})',
  'VALIDATE.idempotencyKeyReused':
    'A chave de idempotência {key} já é a da linha {line} deste arquivo, para outra operação: a execução a recusaria (o banco a recusaria, ou a responderia com o resultado daquela). Dê a cada linha uma chave própria',
  'VALIDATE.moreErrors': '... há mais erros (só os primeiros {max} listados)',
  'VALIDATE.cannotProcess': '{file}: o arquivo não pode ser processado',
  'VALIDATE.noKind': '{file}: Esperava o arquivo numa pasta de tipo ou com nome <tipo>-*.csv (ou --kind), veio {name}',
  'VALIDATE.notFound': '{file}: não encontrado',
  'SUMMARY.amounts': 'valores: {parts}',
  'PROGRESS.rows': (p: P) =>
    `${p.label}: ${p.done}${p.total ? `/${p.total}` : ''} linhas${p.counts ? ` (${p.counts})` : ''}, ${p.rate} linhas/s${p.eta ? `, faltam ${p.eta}` : ''}`,
  'PROGRESS.done': (p: P) =>
    `${p.label}: ${plural(p.done, 'linha processada', 'linhas processadas')}${p.counts ? ` (${p.counts})` : ''}`,
  'PROGRESS.bar': '{label} [{bar}] {value}/{total} linhas | {duration_formatted} | faltam {eta_formatted}',
  'STATUS.store': 'Store: {store}',
  'STATUS.timeZone': 'Horários de Brasília ({zone})',
  'STATUS.driver': 'Em uso agora pelo processo {pid} em {host} desde {since}',
  'STATUS.driverNobody': 'Em uso agora por: ninguém (nenhum daemon ou run usa a pasta de dados)',
  'STATUS.daemons': 'Daemons compartilhando o store: {count} ({alive} vivos)',
  'STATUS.daemon':
    'em {host} processo {pid}, visto por último em {seen}; detém {rows} linhas não terminadas, {files} arquivos, {answers} respostas em escrita',
  'STATUS.rejectedWhole': 'arquivo recusado por inteiro: {code}',
  'STATUS.toGo': '{count} a fazer',
  'STATUS.rateUnknown': 'ritmo ainda desconhecido',
  'STATUS.rate': '{rate} linhas/s, termina em {eta}',
  'STATUS.waitingRows':
    'Linhas aguardando: {count} (o banco não pôde ser alcançado; nada delas foi enviado; vão quando ele voltar)',
  'STATUS.waitingCredentials':
    'Linhas aguardando: {count} (o banco recusou as credenciais do remessa, HTTP 401/403: confira REMESSA_API_KEY, bank.apiKeyFile ou a credencial do systemd remessa-api-key; nada delas foi feito; vão quando o banco aceitá-las de novo)',
  'STATUS.settleHint':
    'Para resolvê-las: `remessa retry [LOTE]` pergunta de novo ao banco; `remessa resolve LOTE LINHA --as ...` registra o que uma pessoa conferiu.',
  'STATUS.noStore': 'Ainda não há store em {file}: nada foi processado.',
  'STATUS.batches': 'Lotes: {count}',
  'STATUS.noRows': 'nenhuma linha',
  'STATUS.older': '... mais {count} antigos',
  'STATUS.rows': 'Linhas: {counts}',
  'STATUS.none': 'nenhuma',
  'STATUS.uncertain': 'Linhas incertas: {count}',
  'STATUS.uncertainRow': (p: P) =>
    `${p.kind} ${p.file} linha ${p.line}${p.step ? ` etapa ${p.step}` : ''}: ${p.code} ${p.message} (chave de idempotência ${p.key})`,
  'RUN.parked': 'parado antes do fim: ainda sem resposta, continua na próxima execução',
  'RUN.notFound': 'não encontrado',
  'RUN.notRegular': 'não é um arquivo comum (links na caixa de entrada nunca são seguidos)',
  'RUN.takenMeanwhile': 'pego por outro processo enquanto isso',
  'RUN.waitsApproval': 'aguarda aprovação (remessa approve / reject) -> prévia {preview}',
  'PREVIEW.rows': (p: P) => plural(p.count, 'linha', 'linhas'),
  'PREVIEW.notLookedUp': 'ainda não consultada ({reason}); consultada de novo antes de pagar',
  'PREVIEW.noAnswer': 'o banco não respondeu',
  'PREVIEW.file': '{file} (lote {batch}), dono {owner}',
  'PREVIEW.ownerUnknown': 'desconhecido',
  'PREVIEW.decide':
    'remessa approve {batch} --by NOME | remessa reject {batch} --by NOME --note TEXTO | ou deixe {marker} com o seu nome ao lado do arquivo na caixa de entrada',
  'PREVIEW.decideNoMarker':
    'remessa approve {batch} --by NOME | remessa reject {batch} --by NOME --note TEXTO | um {marker} ao lado do arquivo na caixa de entrada seria recusado: na pasta {dir} outros usuários podem renomeá-lo (proteja-a com chmod +t, ou defina approval.markersFrom)',
  'PREVIEW.decideIn':
    'remessa approve {batch} --by NOME | remessa reject {batch} --by NOME --note TEXTO | ou deixe {marker} com o seu nome na pasta dos aprovadores {dir} (approval.markersFrom)',
  'RUN.nothingWaiting': 'nada esperando na caixa de entrada',
  'RUN.credentialsRefused': (p: P) =>
    `${plural(p.count, 'linha aguardando', 'linhas aguardando')}: o banco recusou as credenciais do remessa (confira REMESSA_API_KEY, bank.apiKeyFile ou a credencial do systemd remessa-api-key) e nada delas foi feito; a resposta as mostra aguardando: execute de novo quando a chave estiver corrigida`,
  'RUN.waitingRows': (p: P) =>
    `${plural(p.count, 'linha aguardando', 'linhas aguardando')}: o banco não pode ser alcançado e nada delas foi enviado; ainda sem resposta: a próxima execução ou o daemon as envia`,
  'DECIDE.approved':
    '{file} ({batch}): aprovado por {by} (usuário do sistema {user}) em {at}; o daemon o paga em instantes (ou o próximo `remessa run`)',
  'DECIDE.rejected':
    '{file} ({batch}): rejeitado por {by} (usuário do sistema {user}) em {at}; toda linha é respondida `rejected`, nada foi enviado',
  'DECIDE.notDecided': 'não decidido: {reason}',
  'RESOLVE.done': '{file} linha {line} (lote {batch}): {from} -> {to}, resolvida por {by} em {at}; {then}',
  'RESOLVE.reanswered': 'resposta escrita de novo: {answer}',
  'RESOLVE.noLine': '{file} (lote {batch}) não tem a linha de dados {line}',
  'RESOLVE.notUncertain': (p: P) =>
    `Esperava uma linha incerta (uncertain), veio a linha ${p.line} de ${p.file}, ${said(ROW_STATE, p.state)}${p.by ? `, resolvida por ${p.by} em ${p.at}` : ''}: só uma linha de resultado desconhecido é resolvida por uma pessoa; nada foi alterado`,
  'RESOLVE.nothingSent': (p: P) =>
    `Esperava uma linha com um pedido ao banco de resultado desconhecido, veio a linha ${p.line} de ${p.file}, incerta${p.step ? ` na etapa ${p.step}` : ''} antes de qualquer pedido com efeito: o banco não pode tê-la feito (não foi paga nem criada), então não é dada como succeeded. \`remessa retry\` tenta de novo; nada foi alterado`,
  'RESOLVE.notFinished': 'o lote ainda não terminou: sua resposta é escrita quando terminar',
  'BATCH.notFound':
    'Esperava o id de um lote, um prefixo único dele ou sua etiqueta de 8 caracteres (4 ou mais), ou um nome de arquivo, veio {ref}: nenhum lote corresponde. `remessa status` lista os lotes',
  'BATCH.ambiguous': '{ref} corresponde a {count} lotes; dê mais caracteres do id: {batches}',
  'RETRY.batch': '{file} (lote {batch})',
  'RETRY.batchRejected': '{file} foi rejeitado por inteiro: nada dele foi enviado, nada é tentado de novo',
  'RETRY.settled': '{batch}: nada a tentar de novo, toda linha está resolvida',
  'RETRY.nothing': 'nada a tentar de novo: nenhum lote tem linhas incertas, aguardando o banco ou paradas',
  'RETRY.needsFile': '{batch}: nem todas as suas linhas foram guardadas; deposite o arquivo de novo para continuar',
  'RETRY.failed': '{batch}: não pôde ser tentado de novo: {reason}',
  'RETRY.awaitsApproval': '{batch}: aguarda aprovação (remessa approve / reject); nada dele é enviado antes da decisão',
  'RETRY.approvedWaits':
    '{batch}: aprovado, ainda não pago: quem o paga é o daemon (em até approval.pollMs) ou o próximo `remessa run`, não o retry',
  'RECONCILE.summary': (p: P) =>
    `conciliado: ${plural(p.changes, 'mudança', 'mudanças')}, ${plural(p.listed, 'cobrança listada', 'cobranças listadas')}, ${plural(p.lookedUp, 'consultada', 'consultadas')}${p.failed ? ` (${plural(p.failed, 'falhou', 'falharam')})` : ''}, ${plural(p.events, 'evento aplicado', 'eventos aplicados')}`,
  'STATUS.foreign': 'Eventos do banco sobre coisas que o remessa não criou: {count}',
  'STATUS.foreignEvent': '{type} {subject} (evento {id})',
  'STATUS.waitingFinal': 'Aguardando status final do banco: {count}',
  'STATUS.waitingThing': '{kind} {key}: {status} desde {since} ({file} linha {line})',
  'STATUS.waitingThingDue': '{kind} {key}: {status} desde {since}, prazo {due} ({file} linha {line})',
  'STATUS.filterSince': 'desde {at}',
  'STATUS.filterUntil': 'até {at}',
  'STATUS.filterKind': 'tipo {kinds}',
  'STATUS.filterState': 'estado {states}',
  'STATUS.valid': 'válidas',
  'STATUS.invalid': 'inválidas',
  // O lock da pasta de dados (src/runner/lock.ts): a recusa de um segundo processo, no idioma do comando.
  DATA_FOLDER_LOCKED:
    'Esperava ser o único processo usando a pasta de dados {dir}, mas outro a está usando: {holder}{waited}. {advice}',
  'DATA_FOLDER_LOCKED.waited': ' (esperou {seconds} s)',
  'DATA_FOLDER_LOCKED.wait':
    'Pare-o antes, ou dê a `remessa {command}` a opção --wait-lock[=SEGUNDOS] para esperar por ele.',
  INBOX_SERVED_BY_OTHER_STORE:
    'Esperava uma inbox deste store SQLite, mas {inbox} é atendida pelos daemons do store {store}: defina store.url como eles (um store SQLite ao lado deles não veria os arquivos e linhas que eles tomaram). Se nenhum daemon a atende mais por aquele store, apague {file} e rode `remessa {command}` de novo.',
  'DATA_FOLDER_LOCKED.stop': 'Pare-o antes e rode `remessa {command}` de novo.',
  'DATA_FOLDER_LOCKED.daemonName':
    'Esperava ser o único processo com o nome de daemon {name} nesta máquina, mas outro o está usando: {holder}. Pare-o antes, ou dê a este daemon outro store.daemonName no seu arquivo de configuração.',
  LOCK_HOLDER: 'pid {pid} na máquina {host}, comando {command}, desde {since}',
  'LOCK_HOLDER.unknown': 'um processo que ainda não escreveu seus dados',
  // A linha de comando (src/cli.ts): a ajuda, e o que ela recusa do que foi digitado.
  'CLI.program': 'Daemon de lotes para uma API bancária (banking as a service) brasileira',
  'CLI.opt.config': 'arquivo de configuração (padrão: REMESSA_CONFIG ou config/remessa.jsonc)',
  'CLI.opt.locale': 'idioma das mensagens: pt-BR (padrão) ou en (acima do locale da configuração)',
  'CLI.opt.help': 'mostra a ajuda do comando',
  'CLI.cmd.help': 'mostra a ajuda de um comando',
  'CLI.daemon': 'vigia a caixa de entrada e processa os lotes até SIGTERM/SIGINT',
  'CLI.run':
    'processa os arquivos dados, ou tudo o que espera na caixa de entrada, e sai (código diferente de 0 se alguma linha não deu certo)',
  'CLI.run.files': 'arquivos CSV a processar',
  'CLI.run.kind': 'tipo de lote dos arquivos dados (padrão: pela pasta ou pelo prefixo do nome)',
  'CLI.opt.waitLock':
    'quando outro processo (um daemon) usa a pasta de dados, espera por ele (até SEGUNDOS; sem valor, até ficar livre) em vez de sair com 2',
  'CLI.validate': 'simulação: mostra cada erro e os totais; nenhuma requisição é enviada',
  'CLI.validate.file': 'arquivo CSV a conferir',
  'CLI.validate.kind': 'tipo de lote do arquivo (padrão: pela pasta ou pelo prefixo do nome)',
  'CLI.reconcile':
    'descobre o que o banco fez com as cobranças, QR codes e pagamentos criados pelo remessa (eventos e consultas); escreve o retorno',
  'CLI.reconcile.since':
    'primeira data de criação (aaaa-mm-dd) das cobranças a listar (padrão: a da mais antiga em aberto)',
  'CLI.reconcile.until': 'última data de criação (aaaa-mm-dd) das cobranças a listar (padrão: hoje)',
  'CLI.arg.batch': 'id do lote, um prefixo único dele, ou o nome do arquivo',
  'CLI.approve':
    'libera para pagamento um arquivo que espera aprovação (controles de valores: README "Money controls")',
  'CLI.approve.by':
    'o nome de quem aprova, registrado com a hora ao lado do usuário do sistema que roda o comando (é ele que conta)',
  'CLI.reject': 'responde um arquivo que espera aprovação com todas as linhas rejeitadas; nada é enviado',
  'CLI.reject.by': 'o nome de quem rejeita, registrado com a hora ao lado do usuário do sistema que roda o comando',
  'CLI.reject.note': 'por quê: escrito em cada linha da resposta',
  'CLI.status':
    'lotes (parados, em andamento com ritmo e previsão, também os arquivos rejeitados), linhas por status, o que está incerto',
  'CLI.status.json': 'imprime um documento JSON (seu formato: docs/operations.md, "remessa status --json")',
  'CLI.status.since':
    'só lotes recebidos em DATA ou depois (AAAA-MM-DD ou DD/MM/AAAA, o dia inteiro de Brasília, ou uma hora ISO 8601)',
  'CLI.status.until': 'só lotes recebidos em DATA ou antes (um dia inclui o dia inteiro de Brasília)',
  'CLI.status.kind': 'só este tipo (pode repetir)',
  'CLI.status.state': 'só lotes neste estado: {states} (pode repetir, ou separar por vírgulas)',
  'CLI.status.backwards': '--since ({since}) é depois de --until ({until}): nenhum arquivo é recebido entre os dois',
  'CLI.resolve':
    'resolve uma linha incerta que uma pessoa conferiu com o banco: quem, quando e por quê ficam guardados no store',
  'CLI.resolve.line': 'o número da linha no arquivo (como `status` e o arquivo de resultado o mostram)',
  'CLI.resolve.as': 'o que o banco diz que aconteceu',
  'CLI.resolve.note': 'o que foi conferido, e onde (guardado com a linha)',
  'CLI.resolve.by': 'quem conferiu (padrão: o usuário do sistema)',
  'CLI.retry':
    'pergunta de novo ao banco, agora, pelas linhas incertas, em espera e paradas de um lote (ou de todos); responde de novo',
  'CLI.retry.batch': 'id do lote, um prefixo único dele, ou o nome do arquivo (padrão: todo lote com tais linhas)',
  'CLI.webhooks': 'os webhooks cadastrados no banco para o receptor do remessa (webhooks.receiver.publicUrl)',
  'CLI.webhooks.register': 'cadastra a url pública para os tipos de evento (padrão: os que interessam ao remessa)',
  'CLI.webhooks.events': 'tipos de evento separados por vírgulas, p. ex. CHARGE_PAID,PIX_RECEIVED',
  'CLI.webhooks.list': 'mostra o que está cadastrado no banco',
  'CLI.webhooks.update': 'envia de novo a url, o esquema e a autorização atuais (p. ex. depois de trocar a credencial)',
  'CLI.webhooks.id': 'um id de cadastro (pode repetir); padrão: os da url pública',
  'CLI.webhooks.delete': 'remove cadastros',
  'CLI.doctor':
    'confere o perfil do provedor contra o banco com requisições GET só de leitura; diz o que respondeu (docs/providers.md)',
  'CLI.sandbox': 'inicia o sandbox do banco sozinho',
  'CLI.sandbox.port': 'porta TCP; 0 escolhe uma livre',
  'CLI.sandbox.host': 'interface onde escutar (padrão 127.0.0.1)',
  'CLI.sandbox.data': 'arquivo SQLite do seu estado (padrão: em memória)',
  'CLI.sandbox.apiKey': 'aceita também esta chave de API (pode repetir)',
  'CLI.sandbox.faultSeed': 'semente do injetor de falhas',
  'CLI.sandbox.loopback': 'deixa urls de webhook apontarem para localhost (para receptores locais)',
  'CLI.sandbox.profile': 'dialeto a servir: {profiles} (padrão: sandbox.profile, senão bank.profile)',
  'CLI.sandbox.tlsCert': 'serve HTTPS com este certificado (PEM; padrão: sandbox.tls.certFile)',
  'CLI.sandbox.tlsKey': 'chave privada de --tls-cert (PEM, sem senha; padrão: sandbox.tls.keyFile)',
  'CLI.sandbox.tlsClientCa':
    'exige certificados de cliente emitidos por esta CA (TLS mútuo; padrão: sandbox.tls.clientCaFile)',
  'CLI.title.Usage:': 'Uso:',
  'CLI.title.Arguments:': 'Argumentos:',
  'CLI.title.Options:': 'Opções:',
  'CLI.title.Commands:': 'Comandos:',
  'CLI.title.Global Options:': 'Opções globais:',
  'CLI.choices': 'valores: {choices}',
  'CLI.error': 'erro: {message}',
  'CLI.suggest': '(Você quis dizer {what}?)',
  'CLI.unknownOption': 'opção desconhecida {option}',
  'CLI.unknownCommand': 'comando desconhecido {command}',
  'CLI.missingArgument': 'falta o argumento obrigatório {argument}',
  'CLI.optionMissingArgument': 'a opção {option} precisa de um valor',
  'CLI.missingMandatoryOptionValue': 'falta a opção obrigatória {option}',
  'CLI.excessArguments': 'argumentos demais: esperava no máximo {expected}, veio {got}',
  'CLI.invalidOption': 'opção {option}: {why}',
  'CLI.invalidArgument': 'argumento {argument}: {why}',
  'CLI.invalidChoice': 'Esperava um de {choices}, veio {got}',
  'CLI.expect.locale': 'Esperava um idioma ({locales}), veio {got}',
  'CLI.expect.port': 'Esperava uma porta de 0 a 65535, veio {got}',
  'CLI.expect.integer': 'Esperava um número inteiro, veio {got}',
  'CLI.expect.waitLock': 'Esperava --wait-lock=SEGUNDOS com um número de segundos, veio {got}',
  'CLI.expect.day': 'Esperava uma data aaaa-mm-dd, veio {got}',
  'CLI.expect.kind': 'Esperava um tipo de lote ({kinds}), veio {got}',
  'CLI.expect.profile': 'Esperava um perfil de provedor ({profiles}), veio {got}',
  'CLI.expect.state': 'Esperava um estado de lote ({states}), veio {got}',
  'CLI.expect.date':
    'Esperava uma data AAAA-MM-DD ou DD/MM/AAAA, ou uma hora ISO 8601 com o fuso (2026-11-23T14:00:00Z), veio {got}',
  'CLI.expect.line': 'Esperava um número de linha (1 ou mais), veio {got}',
  'CLI.noStore': 'Não há store em {where}: nada espera aprovação',
};
